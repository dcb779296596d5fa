/* test_map_file.c: the JSON map file (server/map_file.c): a good file becomes
 * the map; every class of bad file is refused with an error that names the
 * element and the field; the real server loads --map at start and refuses to
 * start on a bad one, saying where. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_run.h"
#include "map_file.h"
#include "steerd_proc.h"

static steer_map *new_map(void) {
  steer_map *m = steer_map_create(v2(-100, -100), v2(100, 100), 8.0f);
  ck_assert_ptr_nonnull(m);
  return m;
}

static const char *GOOD = "{\"format\": \"steerd-map\", \"version\": 1, \"obstacles\": ["
                          "{\"id\": 1, \"type\": \"circle\", \"center\": [10, 10], \"radius\": 2},"
                          "{\"id\": 7, \"type\": \"polygon\", \"points\": [[0,0],[10,0],[10,10],[8,10],[8,2],[2,2],"
                          "[2,10],[0,10]]},"
                          "{\"id\": 3, \"type\": \"wall\", \"points\": [[-50,-20],[50,-20],[50,-40]]}]}";

START_TEST(test_good_file) {
  steer_map *m = new_map();
  char err[256] = "";
  ck_assert_int_eq(steerd_map_parse(GOOD, strlen(GOOD), m, err, sizeof err), 0);
  ck_assert_uint_eq(steer_map_count(m), 3);
  ck_assert_uint_eq(steer_map_segment_count(m), 8 + 2);
  uint32_t id;
  steer_obstacle_desc d;
  ck_assert_int_eq(steer_map_get(m, 1, &id, &d), STEER_OK); /* file order */
  ck_assert_uint_eq(id, 7);
  ck_assert_uint_eq(d.kind, STEER_OBSTACLE_POLYGON);
  ck_assert(steer_map_inside(m, v2(1, 5)));   /* the concave U's arm */
  ck_assert(!steer_map_inside(m, v2(5, 5)));  /* its notch */
  ck_assert(steer_map_inside(m, v2(10.5f, 10.5f)));
  steer_map_destroy(m);
}
END_TEST

typedef struct bad_case {
  const char *json;
  const char *says; /* the error must contain this */
} bad_case;

#define OB(x) "{\"format\": \"steerd-map\", \"version\": 1, \"obstacles\": [" x "]}"

static const bad_case bad[] = {
    {"{\"format\": \"steerd-map\", \"version\": 1, \"obstacles\": [", "line 1"},
    {"[1, 2]", "not a JSON object"},
    {"{\"format\": \"other\", \"version\": 1, \"obstacles\": []}", "format:"},
    {"{\"format\": \"steerd-map\", \"version\": 2, \"obstacles\": []}", "version: 2 is not supported"},
    {"{\"format\": \"steerd-map\", \"version\": \"1\", \"obstacles\": []}", "version:"},
    {"{\"format\": \"steerd-map\", \"version\": 1}", "obstacles: missing"},
    {"{\"format\": \"steerd-map\", \"version\": 1, \"obstacles\": [], \"colour\": 1}", "colour: unknown field"},
    {"{\"format\": \"steerd-map\", \"version\": 1, \"version\": 1, \"obstacles\": []}", "duplicate"},
    {OB("5"), "obstacles[0]: not an object"},
    {OB("{\"type\": \"circle\", \"center\": [0, 0], \"radius\": 1}"), "obstacles[0].id"},
    {OB("{\"id\": 0, \"type\": \"circle\", \"center\": [0, 0], \"radius\": 1}"), "obstacles[0].id"},
    {OB("{\"id\": 1.5, \"type\": \"circle\", \"center\": [0, 0], \"radius\": 1}"), "obstacles[0].id"},
    {OB("{\"id\": 1, \"type\": \"square\", \"points\": [[0,0],[1,0],[1,1]]}"), "obstacles[0].type"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"centre\": [0, 0], \"radius\": 1}"), "obstacles[0].centre: unknown"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"center\": [0], \"radius\": 1}"), "obstacles[0].center"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"center\": [0, \"a\"], \"radius\": 1}"), "obstacles[0].center"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"center\": [0, 0], \"radius\": 0}"), "obstacles[0].radius"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"center\": [0, 0], \"radius\": 1e300}"), "obstacles[0].radius"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"center\": [99.5, 0], \"radius\": 1}"), "obstacles[0].center"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"center\": [0, 0], \"radius\": 1, \"points\": []}"),
     "obstacles[0].points"},
    {OB("{\"id\": 1, \"type\": \"wall\", \"points\": [[0,0]]}"), "obstacles[0].points"},
    {OB("{\"id\": 1, \"type\": \"polygon\", \"points\": [[0,0],[1,0]]}"), "obstacles[0].points"},
    {OB("{\"id\": 1, \"type\": \"polygon\", \"points\": [[0,0],[1,0],[1]]}"), "obstacles[0].points[2]"},
    {OB("{\"id\": 1, \"type\": \"polygon\", \"points\": [[0,0],[2,2],[2,0],[0,2]]}"), "obstacles[0].points"},
    {OB("{\"id\": 1, \"type\": \"polygon\", \"points\": [[0,0],[1,1],[2,2]]}"), "zero area"},
    {OB("{\"id\": 1, \"type\": \"wall\", \"points\": [[0,0],[500,0]]}"), "outside the world bounds"},
    {OB("{\"id\": 1, \"type\": \"wall\", \"points\": [[0,0],[5,0]], \"radius\": 1}"), "obstacles[0]: a wall"},
    {OB("{\"id\": 4, \"type\": \"wall\", \"points\": [[0,0],[5,0]]},"
        "{\"id\": 4, \"type\": \"wall\", \"points\": [[0,3],[5,3]]}"),
     "obstacles[1].id: 4 is used"},
};

START_TEST(test_bad_files) {
  const bad_case *c = &bad[_i];
  steer_map *m = new_map();
  char err[256] = "";
  ck_assert_int_eq(steerd_map_parse(c->json, strlen(c->json), m, err, sizeof err), -1);
  ck_assert_msg(strstr(err, c->says) != NULL, "case %d: error \"%s\" does not say \"%s\"", _i, err, c->says);
  steer_map_destroy(m);
}
END_TEST

/* ---- the real server ------------------------------------------------------ */

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

START_TEST(test_server_loads_map) {
  char path[] = "/tmp/steerd_map_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  write_file(path, GOOD);
  const char *extra[] = {"--map", path, NULL};
  steerd_proc p;
  ck_assert_int_eq(steerd_proc_start(&p, STEERD_BINARY, extra, 20000), 0);
  ck_assert(steerd_proc_log_contains(&p, "3 obstacles"));
  steerd_proc_stop(&p, 5000);
  unlink(path);
}
END_TEST

START_TEST(test_server_refuses_bad_map) {
  char path[] = "/tmp/steerd_map_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  write_file(path, OB("{\"id\": 1, \"type\": \"polygon\", \"points\": [[0,0],[1,0],[1]]}"));
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s --bind 127.0.0.1 --port 0 --http-port 0 --map %s 2>&1", STEERD_BINARY, path);
  FILE *out = popen(cmd, "r");
  ck_assert_ptr_nonnull(out);
  char text[8192];
  size_t n = fread(text, 1, sizeof text - 1, out);
  text[n] = '\0';
  int status = pclose(out);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0);
  ck_assert_msg(strstr(text, "obstacles[0].points[2]") != NULL, "output: %s", text);
  unlink(path);
}
END_TEST

static Suite *map_file_suite(void) {
  Suite *s = suite_create("map_file");
  TCase *t = check_tcase(s, "parse", 60);
  tcase_add_test(t, test_good_file);
  tcase_add_loop_test(t, test_bad_files, 0, (int)(sizeof bad / sizeof bad[0]));
  TCase *srv = check_tcase(s, "server", 120);
  tcase_add_test(srv, test_server_loads_map);
  tcase_add_test(srv, test_server_refuses_bad_map);
  return s;
}

int main(void) { return check_run(map_file_suite()); }
