/* test_map_file.c: the JSON map file (server/map_file.c): a good file becomes
 * the map; every class of bad file is refused with an error that names the
 * element and the field; the real server loads --map at start and refuses to
 * start on a bad one, saying where. Moving AI grid maps: their blocked cells
 * become the rectangles of the rule, .scen points land in their cells, bad
 * files are refused with line and column, and the server loads them and
 * refuses one its bounds do not contain, saying which bounds it needs. Tiled
 * maps: every kind of shape and collision tile becomes its obstacle, base64
 * data and external tilesets are read, bad maps are refused naming the layer
 * and object, and the server starts on one. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static const char *GOOD =
    "{\"format\": \"steerd-map\", \"version\": 1, \"obstacles\": ["
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
  ck_assert(steer_map_inside(m, v2(1, 5)));  /* the concave U's arm */
  ck_assert(!steer_map_inside(m, v2(5, 5))); /* its notch */
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
    {"{\"format\": \"steerd-map\", \"version\": 1, \"obstacles\": [], \"colour\": 1}",
     "colour: unknown field"},
    {"{\"format\": \"steerd-map\", \"version\": 1, \"version\": 1, \"obstacles\": []}", "duplicate"},
    {OB("5"), "obstacles[0]: not an object"},
    {OB("{\"type\": \"circle\", \"center\": [0, 0], \"radius\": 1}"), "obstacles[0].id"},
    {OB("{\"id\": 0, \"type\": \"circle\", \"center\": [0, 0], \"radius\": 1}"), "obstacles[0].id"},
    {OB("{\"id\": 1.5, \"type\": \"circle\", \"center\": [0, 0], \"radius\": 1}"), "obstacles[0].id"},
    {OB("{\"id\": 1, \"type\": \"square\", \"points\": [[0,0],[1,0],[1,1]]}"), "obstacles[0].type"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"centre\": [0, 0], \"radius\": 1}"),
     "obstacles[0].centre: unknown"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"center\": [0], \"radius\": 1}"), "obstacles[0].center"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"center\": [0, \"a\"], \"radius\": 1}"), "obstacles[0].center"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"center\": [0, 0], \"radius\": 0}"), "obstacles[0].radius"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"center\": [0, 0], \"radius\": 1e300}"), "obstacles[0].radius"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"center\": [0, 0], \"radius\": 1, \"points\": []}"),
     "obstacles[0].points"},
    {OB("{\"id\": 1, \"type\": \"wall\", \"points\": [[0,0]]}"), "obstacles[0].points"},
    {OB("{\"id\": 1, \"type\": \"polygon\", \"points\": [[0,0],[1,0]]}"), "obstacles[0].points"},
    {OB("{\"id\": 1, \"type\": \"polygon\", \"points\": [[0,0],[1,0],[1]]}"), "obstacles[0].points[2]"},
    {OB("{\"id\": 1, \"type\": \"wall\", \"points\": [[0,0],[5,0]], \"radius\": 1}"), "obstacles[0]: a wall"},
    {OB("{\"id\": 4, \"type\": \"wall\", \"points\": [[0,0],[5,0]]},"
        "{\"id\": 4, \"type\": \"wall\", \"points\": [[0,3],[5,3]]}"),
     "obstacles[1].id: 4 is used"},
};

/* The rules of shape: each fault its own message, naming the point and the rule
 * (the world here is -100..100). */
static const bad_case shape[] = {
    {OB("{\"id\": 1, \"type\": \"wall\", \"points\": [[0,0],[5,0],[500,0]]}"),
     "obstacles[0].points[2]: (500, 0) is outside the world bounds (-100,-100)-(100,100)"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"center\": [120, 0], \"radius\": 1}"),
     "obstacles[0].center: (120, 0) is outside the world bounds (-100,-100)-(100,100)"},
    {OB("{\"id\": 1, \"type\": \"circle\", \"center\": [99.5, 0], \"radius\": 1}"),
     "obstacles[0].radius: the circle reaches outside the world bounds (-100,-100)-(100,100)"},
    {OB("{\"id\": 1, \"type\": \"polygon\", \"points\": [[0,0],[0.0002,0],[5,5]]}"),
     "obstacles[0].points[1]: the edge from points[0] is shorter than 1 mm"},
    {OB("{\"id\": 1, \"type\": \"polygon\", \"points\": [[0,0],[5,0],[5,5],[0,0.0005]]}"),
     "obstacles[0].points[0]: the edge from points[3] is shorter than 1 mm"},
    {OB("{\"id\": 1, \"type\": \"polygon\", \"points\": [[0,0],[2,2],[2,0],[0,2]]}"),
     "obstacles[0].points: the edges from points[0] and from points[2] cross or touch"},
    {OB("{\"id\": 1, \"type\": \"polygon\", \"points\": [[0,0],[4,0],[4,4],[2,0],[0,4]]}"),
     "obstacles[0].points: the edges from points[0] and from points[2] cross or touch"},
    {OB("{\"id\": 1, \"type\": \"polygon\", \"points\": [[0,0],[1,1],[2,2]]}"),
     "obstacles[0].points: the polygon has zero area (less than 1 square millimetre)"},
    {OB("{\"id\": 2, \"type\": \"wall\", \"points\": [[0,0],[1,0]]},"
        "{\"id\": 1, \"type\": \"polygon\", \"points\": [[0,0],[1,0],[0.5,0.0000001]]}"),
     "obstacles[1].points: the polygon has zero area (less than 1 square millimetre)"},
};

START_TEST(test_shape_faults) {
  const bad_case *c = &shape[_i];
  steer_map *m = new_map();
  char err[256] = "";
  ck_assert_int_eq(steerd_map_parse(c->json, strlen(c->json), m, err, sizeof err), -1);
  ck_assert_str_eq(err, c->says);
  steer_map_destroy(m);
}
END_TEST

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

/* ---- Moving AI grid maps -------------------------------------------------- */

/* Rows 0 and 1 repeat the run 0..1 (one 2 x 2 rectangle) but not the run
 * 4..5 (row 1 has 4 alone), row 3 ends with a tree. CR LF line ends. */
static const char *GRID = "type octile\r\nheight 4\r\nwidth 6\r\nmap\r\n"
                          "@@..@@\r\n"
                          "@@..@.\r\n"
                          "G.....\r\n"
                          ".@@@@T\r\n";

static void expect_rect(const steer_map *m, uint32_t i, float x0, float y0, float x1, float y1) {
  uint32_t id;
  steer_obstacle_desc d;
  ck_assert_int_eq(steer_map_get(m, i, &id, &d), STEER_OK);
  ck_assert_uint_eq(id, i + 1);
  ck_assert_uint_eq(d.kind, STEER_OBSTACLE_POLYGON);
  ck_assert_uint_eq(d.count, 4);
  const vec2 want[4] = {v2(x0, y0), v2(x1, y0), v2(x1, y1), v2(x0, y1)};
  for (int k = 0; k < 4; k++)
    ck_assert_msg(d.points[k].x == want[k].x && d.points[k].y == want[k].y,
                  "rectangle %u point %d: (%g, %g), not (%g, %g)", id, k, (double)d.points[k].x,
                  (double)d.points[k].y, (double)want[k].x, (double)want[k].y);
}

START_TEST(test_grid_rectangles) {
  ck_assert(steerd_map_is_movingai(GRID, strlen(GRID)));
  ck_assert(!steerd_map_is_movingai(GOOD, strlen(GOOD)));
  steer_map *m = new_map();
  char err[256] = "";
  ck_assert_msg(steerd_map_parse_movingai(GRID, strlen(GRID), m, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(steer_map_count(m), 4);
  expect_rect(m, 0, 0, 0, 2, 2); /* ids in row-major order of the top-left cells */
  expect_rect(m, 1, 4, 0, 6, 1);
  expect_rect(m, 2, 4, 1, 5, 2);
  expect_rect(m, 3, 1, 3, 6, 4);
  steer_map_destroy(m);
}
END_TEST

/* A run whose x-span comes back after a row without it starts a rectangle of
 * its own; a run under a wider one does too; every blocked letter blocks. */
START_TEST(test_grid_merge_rule) {
  const char *t = "type octile\nheight 5\nwidth 4\nmap\n"
                  ".OO.\n"
                  ".SW.\n"
                  "....\n"
                  ".@@.\n"
                  "@@@@";
  steer_map *m = new_map();
  char err[256] = "";
  ck_assert_msg(steerd_map_parse_movingai(t, strlen(t), m, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(steer_map_count(m), 3);
  expect_rect(m, 0, 1, 0, 3, 2);
  expect_rect(m, 1, 1, 3, 3, 4);
  expect_rect(m, 2, 0, 4, 4, 5);
  steer_map_destroy(m);
}
END_TEST

/* A .scen problem's cells (sx, sy) are the world points (sx + 0.5, sy + 0.5):
 * the centre of the file's cell, free, half a metre from its blocked
 * neighbours. */
START_TEST(test_grid_scen_points) {
  const char *t = "type octile\nheight 3\nwidth 5\nmap\n"
                  "@@@@@\n"
                  "@@.@.\n"
                  "@@.@@\n";
  steer_map *m = new_map();
  char err[256] = "";
  ck_assert_msg(steerd_map_parse_movingai(t, strlen(t), m, err, sizeof err) == 0, "%s", err);
  /* bucket map w h sx sy gx gy optimal: from the free cell (2, 1) to (2, 2) */
  const char *scen = "0\tt.map\t5\t3\t2\t1\t2\t2\t1.00000000";
  unsigned b, w, h, sx, sy, gx, gy;
  double opt;
  char name[32];
  ck_assert_int_eq(
      sscanf(scen, "%u\t%31s\t%u\t%u\t%u\t%u\t%u\t%u\t%lf", &b, name, &w, &h, &sx, &sy, &gx, &gy, &opt), 9);
  vec2 s = v2((float)sx + 0.5f, (float)sy + 0.5f), g = v2((float)gx + 0.5f, (float)gy + 0.5f);
  ck_assert(!steer_map_inside(m, s));
  ck_assert(!steer_map_inside(m, g));
  ck_assert(steer_map_free(m, s, 0.25f, 0.0f));
  ck_assert(steer_map_free(m, g, 0.25f, 0.0f));
  ck_assert_float_eq_tol(steer_map_distance(m, s, 10.0f), 0.5f, 1e-6f);
  ck_assert(steer_map_inside(m, v2(1.5f, 1.5f)));  /* cell (1, 1), blocked */
  ck_assert(steer_map_inside(m, v2(3.5f, 1.5f)));  /* cell (3, 1) */
  ck_assert(!steer_map_inside(m, v2(4.5f, 1.5f))); /* cell (4, 1), free */
  ck_assert(steer_map_inside(m, v2(4.5f, 2.5f)));  /* cell (4, 2) */
  ck_assert(steer_map_inside(m, v2(2.5f, 0.5f)));  /* row 0 */
  steer_map_destroy(m);
}
END_TEST

static const bad_case bad_grids[] = {
    {"type tile\nheight 1\nwidth 1\nmap\n.\n", "line 1: not a Moving AI map"},
    {"", "line 1: not a Moving AI map"},
    {"type octile\nheight x\nwidth 1\nmap\n.\n", "line 2: not \"height N\""},
    {"type octile\nheight 0\nwidth 1\nmap\n.\n", "line 2:"},
    {"type octile\nheight 1\nheight 1\nmap\n.\n", "line 3: not \"width N\""},
    {"type octile\nheight 1\nwidth 99999\nmap\n.\n", "line 3:"},
    {"type octile\nheight 1\n", "line 3: the file ends in the header"},
    {"type octile\nheight 1\nwidth 1\nmaps\n.\n", "line 4: not \"map\""},
    {"type octile\nheight 1\nwidth 1\n", "line 4: the file ends before \"map\""},
    {"type octile\nheight 2\nwidth 3\nmap\n...\n..x\n", "line 6, column 3: 'x' is not a map cell"},
    {"type octile\nheight 2\nwidth 3\nmap\n. .\n...\n", "line 5, column 2: byte 0x20 is not a map cell"},
    {"type octile\nheight 2\nwidth 3\nmap\n...\n....\n", "line 6: a row of 4 cells, the map is 3 wide"},
    {"type octile\nheight 2\nwidth 3\nmap\n..\n...\n", "line 5: a row of 2 cells, the map is 3 wide"},
    {"type octile\nheight 3\nwidth 3\nmap\n...\n...\n", "line 7: the file ends after 2 of 3 rows"},
    {"type octile\nheight 1\nwidth 3\nmap\n...\n...\n", "line 6: more rows than the map's height (1)"},
    {"type octile\nheight 2\nwidth 300\nmap\n", "the map is 300 x 2 m: start the server with bounds covering "
                                                "[0,300]x[0,2] (--world 0,0,300,2)"},
};

START_TEST(test_bad_grids) {
  const bad_case *c = &bad_grids[_i];
  steer_map *m = new_map();
  char err[256] = "";
  char *text = NULL;
  size_t len = strlen(c->json);
  if (strstr(c->json, "width 300")) { /* the rows of a map wider than the bounds (-100..100) */
    text = malloc(len + 2 * 301 + 1);
    ck_assert_ptr_nonnull(text);
    memcpy(text, c->json, len);
    for (int r = 0; r < 2; r++, len += 301) {
      memset(text + len, '.', 300);
      text[len + 300] = '\n';
    }
  }
  ck_assert_int_eq(steerd_map_parse_movingai(text ? text : c->json, len, m, err, sizeof err), -1);
  ck_assert_msg(strstr(err, c->says) != NULL, "case %d: error \"%s\" does not say \"%s\"", _i, err, c->says);
  ck_assert_uint_eq(steer_map_count(m), 0);
  free(text);
  steer_map_destroy(m);
}
END_TEST

/* One more isolated blocked cell than a map holds obstacles: refused before
 * any is added, with the count. */
START_TEST(test_grid_too_many_rectangles) {
  uint32_t w = 512, h = 2 * (STEER_MAP_MAX_OBSTACLES / (w / 2)) + 2;
  size_t cap = 64 + (size_t)h * (w + 1);
  char *t = malloc(cap);
  ck_assert_ptr_nonnull(t);
  size_t n = (size_t)snprintf(t, cap, "type octile\nheight %u\nwidth %u\nmap\n", h, w);
  for (uint32_t y = 0; y < h; y++) {
    for (uint32_t x = 0; x < w; x++)
      t[n++] = (x + y) % 2 ? '.' : '@';
    t[n++] = '\n';
  }
  steer_map *m = steer_map_create(v2(0, 0), v2((float)w, (float)h), 8.0f);
  ck_assert_ptr_nonnull(m);
  char err[256] = "";
  ck_assert_int_eq(steerd_map_parse_movingai(t, n, m, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "rectangles, more than the") != NULL, "error: %s", err);
  ck_assert_uint_eq(steer_map_count(m), 0);
  steer_map_destroy(m);
  free(t);
}
END_TEST

/* The world loader tells the formats by content; a file named .map that is
 * not a grid map says so rather than failing as JSON. */
START_TEST(test_grid_world_load) {
  steer_world_config c = steer_default_world_config();
  steer_world *w = steer_world_create(&c);
  ck_assert_ptr_nonnull(w);
  char err[256] = "";
  ck_assert_msg(steerd_map_text_load(GRID, strlen(GRID), w, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(steer_map_count(steer_world_map(w)), 4);
  steer_world_destroy(w);
  char path[64];
  snprintf(path, sizeof path, "/tmp/steerd_grid_%d.map", (int)getpid());
  write_file(path, GOOD);
  w = steer_world_create(&c);
  ck_assert_int_eq(steerd_map_file_load(path, w, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "not a Moving AI map") != NULL, "error: %s", err);
  steer_world_destroy(w);
  unlink(path);
}
END_TEST

START_TEST(test_server_loads_grid_map) {
  char path[] = "/tmp/steerd_grid_XXXXXX"; /* no .map: told by its content */
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  write_file(path, GRID);
  const char *extra[] = {"--map", path, "--no-demo", "--world", "0,0,6,4", NULL};
  steerd_proc p;
  ck_assert_int_eq(steerd_proc_start(&p, STEERD_BINARY, extra, 20000), 0);
  ck_assert(steerd_proc_log_contains(&p, "4 obstacles, 16 segments"));
  steerd_proc_stop(&p, 5000);
  unlink(path);
}
END_TEST

/* A map the default bounds (-500..500) do not contain: the server does not
 * start and names the bounds and the option. */
START_TEST(test_server_refuses_grid_outside_bounds) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/steerd_wide_%d.map", (int)getpid());
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "type octile\nheight 2\nwidth 512\nmap\n");
  for (int r = 0; r < 2; r++) {
    for (int x = 0; x < 512; x++)
      fputc(x == 100 ? '@' : '.', f);
    fputc('\n', f);
  }
  fclose(f);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s --bind 127.0.0.1 --port 0 --http-port 0 --no-demo --map %s 2>&1",
           STEERD_BINARY, path);
  FILE *out = popen(cmd, "r");
  ck_assert_ptr_nonnull(out);
  char text[8192];
  size_t n = fread(text, 1, sizeof text - 1, out);
  text[n] = '\0';
  int status = pclose(out);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0);
  ck_assert_msg(strstr(text, "the map is 512 x 2 m: start the server with bounds covering [0,512]x[0,2] "
                             "(--world 0,0,512,2)") != NULL,
                "output: %s", text);
  unlink(path);
}
END_TEST

/* ---- Tiled maps ------------------------------------------------------------- */

/* A Tiled map of 10 x 8 tiles of 16 px (1 m each): tile 3 (index 2 of the
 * embedded tileset) collides; layer data as given (JSON), then the object
 * layer's objects, and more root fields. */
static char *tiled_map(const char *data, const char *objects, const char *more) {
  static const char *fmt =
      "{\"type\": \"map\", \"version\": \"1.10\", \"tiledversion\": \"1.10.2\", \"orientation\": "
      "\"orthogonal\","
      " \"renderorder\": \"right-down\", \"infinite\": false, \"width\": 10, \"height\": 8,"
      " \"tilewidth\": 16, \"tileheight\": 16, \"nextobjectid\": 12, \"nextlayerid\": 4%s,"
      " \"tilesets\": [{\"firstgid\": 1, \"name\": \"ground\", \"tilecount\": 4, \"columns\": 4,"
      "   \"tiles\": [{\"id\": 2, \"properties\": [{\"name\": \"collision\", \"type\": \"bool\", \"value\": "
      "true}]},"
      "              {\"id\": 3, \"properties\": [{\"name\": \"collision\", \"type\": \"bool\", \"value\": "
      "false}]}]}],"
      " \"layers\": [{\"type\": \"tilelayer\", \"id\": 1, \"name\": \"ground\", \"width\": 10, \"height\": 8,"
      "   \"x\": 0, \"y\": 0, \"visible\": true, \"opacity\": 1, \"data\": %s},"
      "  {\"type\": \"group\", \"id\": 3, \"name\": \"level\", \"layers\": [{\"type\": \"objectgroup\", "
      "\"id\": 2,"
      "   \"name\": \"walls\", \"objects\": [%s]}]}]}";
  size_t cap = strlen(fmt) + strlen(data) + strlen(objects) + strlen(more) + 1;
  char *t = malloc(cap);
  ck_assert_ptr_nonnull(t);
  snprintf(t, cap, fmt, more, data, objects);
  return t;
}

/* 80 tile ids: 1 (no collision) but tile 3 at cells (1, 1) and (2, 1), and
 * at (5, 5) flipped horizontally (the flag bits do not change the tile). */
static const char *tiled_data(void) {
  static char d[1024];
  size_t n = 0;
  n += (size_t)snprintf(d + n, sizeof d - n, "[");
  for (int i = 0; i < 80; i++) {
    unsigned gid = (i == 11 || i == 12) ? 3u : (i == 55 ? 0x80000003u : (i == 70 ? 4u : 1u));
    n += (size_t)snprintf(d + n, sizeof d - n, "%s%u", i ? ", " : "", gid);
  }
  snprintf(d + n, sizeof d - n, "]");
  return d;
}

#define TILED_OBJECTS                                                                                        \
  "{\"id\": 4, \"name\": \"crate\", \"x\": 112, \"y\": 16, \"width\": 32, \"height\": 16, \"rotation\": 0}," \
  "{\"id\": 5, \"x\": 16, \"y\": 96, \"polygon\": [{\"x\": 0, \"y\": 0}, {\"x\": 32, \"y\": 0}, {\"x\": 0, " \
  "\"y\": 16}]},"                                                                                            \
  "{\"id\": 6, \"x\": 16, \"y\": 112, \"polyline\": [{\"x\": 0, \"y\": 0}, {\"x\": 32, \"y\": 0}]},"         \
  "{\"id\": 7, \"x\": 128, \"y\": 96, \"width\": 16, \"height\": 16, \"ellipse\": true},"                    \
  "{\"id\": 8, \"x\": 40, \"y\": 40, \"point\": true},"                                                      \
  "{\"id\": 9, \"x\": 0, \"y\": 64, \"width\": 16, \"height\": 16, \"properties\": [{\"name\": "             \
  "\"collision\", "                                                                                          \
  "\"type\": \"bool\", \"value\": false}]},"                                                                 \
  "{\"id\": 10, \"x\": 64, \"y\": 64, \"width\": 32, \"height\": 16, \"rotation\": 90},"                     \
  "{\"id\": 11, \"x\": 0, \"y\": 0, \"width\": 32, \"height\": 16, \"ellipse\": true}"

/* Every kind of Tiled shape becomes the obstacle the rule says, with its
 * Tiled id; collision tiles become rectangles numbered from nextobjectid. */
START_TEST(test_tiled_map) {
  char *text = tiled_map(tiled_data(), TILED_OBJECTS, "");
  ck_assert(steerd_map_is_tiled(text, strlen(text)));
  ck_assert(!steerd_map_is_tiled(GOOD, strlen(GOOD)));
  steer_map *m = new_map();
  char err[256] = "";
  ck_assert_msg(steerd_map_parse_tiled(text, strlen(text), NULL, m, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(steer_map_count(m), 8);
  const uint32_t present[] = {4, 5, 6, 7, 10, 11, 12, 13}, absent[] = {8, 9, 14};
  for (size_t i = 0; i < sizeof present / sizeof present[0]; i++)
    ck_assert_msg(steer_map_find(m, present[i]) >= 0, "obstacle %u missing", present[i]);
  for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
    ck_assert_msg(steer_map_find(m, absent[i]) < 0, "obstacle %u present", absent[i]);
  /* Inside: the two tile rectangles (cells 1..2 of row 1; the flipped tile at
   * (5, 5)), the rectangle at 7..9 x 1..2 m, the triangle, the circle, the
   * rectangle turned a quarter clockwise about its corner (4, 4) to cover
   * 3..4 x 4..6, and the flat ellipse round (1, 0.5). */
  const float in[][2] = {{2.0f, 1.5f}, {5.5f, 5.5f}, {8.0f, 1.5f}, {1.5f, 6.2f},
                         {8.5f, 6.5f}, {3.5f, 5.0f}, {1.9f, 0.5f}, {1.0f, 0.9f}};
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
    ck_assert_msg(steer_map_inside(m, v2(in[i][0], in[i][1])), "(%g, %g) not inside", (double)in[i][0],
                  (double)in[i][1]);
  /* Outside: a free cell, a non-colliding tile (cell (0, 7)), the skipped
   * object 9's place, beyond the circle, the turned rectangle's place before
   * the turn, and the flat ellipse's box corner. */
  const float out[][2] = {{0.5f, 3.5f}, {0.5f, 7.5f}, {0.5f, 4.5f},
                          {8.5f, 7.1f}, {5.0f, 4.5f}, {0.05f, 0.05f}};
  for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
    ck_assert_msg(!steer_map_inside(m, v2(out[i][0], out[i][1])), "(%g, %g) inside", (double)out[i][0],
                  (double)out[i][1]);
  uint32_t id;
  steer_obstacle_desc d;
  for (uint32_t i = 0; i < steer_map_count(m); i++) {
    ck_assert_int_eq(steer_map_get(m, i, &id, &d), STEER_OK);
    if (id == 6) { /* the polyline: a wall of the two points, in metres */
      ck_assert_uint_eq(d.kind, STEER_OBSTACLE_WALL);
      ck_assert_uint_eq(d.count, 2);
      ck_assert(d.points[0].x == 1.0f && d.points[0].y == 7.0f && d.points[1].x == 3.0f &&
                d.points[1].y == 7.0f);
    } else if (id == 7) { /* the round ellipse: a circle */
      ck_assert_uint_eq(d.kind, STEER_OBSTACLE_CIRCLE);
      ck_assert(d.points[0].x == 8.5f && d.points[0].y == 6.5f && d.radius == 0.5f);
    } else if (id == 11) {
      ck_assert_uint_eq(d.kind, STEER_OBSTACLE_POLYGON);
      ck_assert_uint_eq(d.count, 16);
    } else if (id == 12) { /* row 1's run of two collision tiles */
      ck_assert_uint_eq(d.kind, STEER_OBSTACLE_POLYGON);
      ck_assert(d.points[0].x == 1.0f && d.points[0].y == 1.0f && d.points[2].x == 3.0f &&
                d.points[2].y == 2.0f);
    }
  }
  steer_map_destroy(m);
  free(text);
}
END_TEST

/* Base64 tile data (uncompressed) reads as the array does. */
START_TEST(test_tiled_base64) {
  /* 80 ids, little-endian, all 1 but 3 at cell (4, 0). */
  uint8_t raw[320];
  for (int i = 0; i < 80; i++) {
    uint32_t gid = i == 4 ? 3u : 1u;
    raw[4 * i] = (uint8_t)gid, raw[4 * i + 1] = raw[4 * i + 2] = raw[4 * i + 3] = 0;
  }
  static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char b64[512];
  size_t n = 0;
  b64[n++] = '"';
  for (size_t i = 0; i < sizeof raw; i += 3) {
    uint32_t q = (uint32_t)raw[i] << 16 | (i + 1 < sizeof raw ? (uint32_t)raw[i + 1] << 8 : 0u) |
                 (i + 2 < sizeof raw ? raw[i + 2] : 0u);
    b64[n++] = tab[q >> 18 & 63];
    b64[n++] = tab[q >> 12 & 63];
    b64[n++] = i + 1 < sizeof raw ? tab[q >> 6 & 63] : '=';
    b64[n++] = i + 2 < sizeof raw ? tab[q & 63] : '=';
  }
  b64[n++] = '"';
  b64[n] = '\0';
  char *text = tiled_map(b64, "", "");
  char *enc = strstr(text, "\"data\"");
  ck_assert_ptr_nonnull(enc);
  steer_map *m = new_map();
  char err[256] = "";
  ck_assert_msg(steerd_map_parse_tiled(text, strlen(text), NULL, m, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(steer_map_count(m), 1);
  ck_assert(steer_map_inside(m, v2(4.5f, 0.5f)));
  ck_assert(!steer_map_inside(m, v2(3.5f, 0.5f)));
  steer_map_destroy(m);
  free(text);
}
END_TEST

typedef struct tiled_bad {
  const char *data, *objects, *more;
  const char *says;
} tiled_bad;

#define BOWTIE                                                                                               \
  "{\"id\": 5, \"x\": 16, \"y\": 16, \"polygon\": [{\"x\": 0, \"y\": 0}, {\"x\": 32, \"y\": 32}, {\"x\": "   \
  "32, "                                                                                                     \
  "\"y\": 0}, {\"x\": 0, \"y\": 32}]}"

static const tiled_bad tiled_bads[] = {
    {NULL, "", ", \"orientation\": \"isometric\"", "only orthogonal"},
    {NULL, "", ", \"infinite\": true", "infinite"},
    {"\"eJxjYGBgAAAABAAB\", \"encoding\": \"base64\", \"compression\": \"zlib\"", "", "", "zlib-compressed"},
    {"[1, 2, 3]", "", "", "layer \"ground\".data: not 80 tile ids"},
    {"\"AAAA!AAA\", \"encoding\": \"base64\"", "", "", "layer \"ground\".data"},
    {NULL, BOWTIE, "", "layer \"walls\", object 5 (polygon): edges that cross or touch"},
    {NULL, "{\"id\": 6, \"x\": 16, \"y\": 16, \"width\": 0, \"height\": 8}", "",
     "object 6: a shape of zero size"},
    {NULL, "{\"id\": 6, \"x\": 16000, \"y\": 16, \"width\": 16, \"height\": 16}", "",
     "object 6 (rectangle): a point outside the world bounds"},
    {NULL, "{\"x\": 16, \"y\": 16, \"width\": 16, \"height\": 16}", "", "an object without a Tiled id"},
};

/* Each bad map is refused with an error naming the layer, object or field. */
START_TEST(test_tiled_bad) {
  const tiled_bad *b = &tiled_bads[_i];
  char *text = tiled_map(b->data ? b->data : tiled_data(), b->objects, b->more);
  /* A later duplicate of a root field is what the case changes: JSON
   * duplicates are refused, so the case's field replaces the first one. */
  if (b->more[0]) {
    const char *key = strchr(b->more, '"');
    const char *end = strchr(key + 1, '"');
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(end - key + 1), key);
    char *first = strstr(text, name);
    ck_assert_ptr_nonnull(first);
    char *comma = strchr(first, ',');
    memset(first, ' ', (size_t)(comma - first + 1)); /* the file's own field and its comma go */
  }
  steer_map *m = new_map();
  char err[256] = "";
  ck_assert_int_eq(steerd_map_parse_tiled(text, strlen(text), NULL, m, err, sizeof err), -1);
  ck_assert_msg(strstr(err, b->says) != NULL, "case %d: error \"%s\", not \"%s\"", _i, err, b->says);
  steer_map_destroy(m);
  free(text);
}
END_TEST

/* An external tileset next to the map file; the world loader tells a Tiled
 * map by its content; without a file there is no "next to". */
START_TEST(test_tiled_external_tileset) {
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/steerd_tiled_%d", (int)getpid());
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  char tsj[128], map[128];
  snprintf(tsj, sizeof tsj, "%s/walls.tsj", dir);
  snprintf(map, sizeof map, "%s/level.json", dir);
  write_file(tsj, "{\"type\": \"tileset\", \"name\": \"walls\", \"tilecount\": 4, \"tiles\": [{\"id\": 2, "
                  "\"properties\": [{\"name\": \"collision\", \"type\": \"bool\", \"value\": true}]}]}");
  char *text = tiled_map(tiled_data(), "", "");
  char *ts = strstr(text, "\"tilesets\": [");
  ck_assert_ptr_nonnull(ts);
  char *layers = strstr(text, "\"layers\": [");
  size_t cap = strlen(text) + 128;
  char *ext = malloc(cap);
  snprintf(ext, cap, "%.*s\"tilesets\": [{\"firstgid\": 1, \"source\": \"walls.tsj\"}], %s", (int)(ts - text),
           text, layers);
  write_file(map, ext);
  steer_world_config c = steer_default_world_config();
  steer_world *w = steer_world_create(&c);
  ck_assert_ptr_nonnull(w);
  char err[256] = "";
  ck_assert_msg(steerd_map_file_load(map, w, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(steer_map_count(steer_world_map(w)), 2);
  steer_world_destroy(w);
  w = steer_world_create(&c);
  ck_assert_int_eq(steerd_map_text_load(ext, strlen(ext), w, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "external tileset is read only from a map file") != NULL, "%s", err);
  steer_world_destroy(w);
  unlink(tsj);
  unlink(map);
  rmdir(dir);
  free(ext);
  free(text);
}
END_TEST

/* The real server starts on a .tmj map and says what it read. */
START_TEST(test_server_loads_tiled_map) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/steerd_tiled_%d.tmj", (int)getpid());
  char *text = tiled_map(tiled_data(), TILED_OBJECTS, "");
  write_file(path, text);
  const char *extra[] = {"--map", path, "--no-demo", "--world", "0,0,10,8", NULL};
  steerd_proc p;
  ck_assert_int_eq(steerd_proc_start(&p, STEERD_BINARY, extra, 20000), 0);
  ck_assert(steerd_proc_log_contains(&p, ": 8 obstacles"));
  steerd_proc_stop(&p, 5000);
  unlink(path);
  free(text);
}
END_TEST

static Suite *map_file_suite(void) {
  Suite *s = suite_create("map_file");
  TCase *t = check_tcase(s, "parse", 60);
  tcase_add_test(t, test_good_file);
  tcase_add_loop_test(t, test_bad_files, 0, (int)(sizeof bad / sizeof bad[0]));
  tcase_add_loop_test(t, test_shape_faults, 0, (int)(sizeof shape / sizeof shape[0]));
  TCase *grid = check_tcase(s, "grid", 60);
  tcase_add_test(grid, test_grid_rectangles);
  tcase_add_test(grid, test_grid_merge_rule);
  tcase_add_test(grid, test_grid_scen_points);
  tcase_add_loop_test(grid, test_bad_grids, 0, (int)(sizeof bad_grids / sizeof bad_grids[0]));
  tcase_add_test(grid, test_grid_too_many_rectangles);
  tcase_add_test(grid, test_grid_world_load);
  TCase *tiled = check_tcase(s, "tiled", 60);
  tcase_add_test(tiled, test_tiled_map);
  tcase_add_test(tiled, test_tiled_base64);
  tcase_add_loop_test(tiled, test_tiled_bad, 0, (int)(sizeof tiled_bads / sizeof tiled_bads[0]));
  tcase_add_test(tiled, test_tiled_external_tileset);
  TCase *srv = check_tcase(s, "server", 120);
  tcase_add_test(srv, test_server_loads_map);
  tcase_add_test(srv, test_server_refuses_bad_map);
  tcase_add_test(srv, test_server_loads_grid_map);
  tcase_add_test(srv, test_server_refuses_grid_outside_bounds);
  tcase_add_test(srv, test_server_loads_tiled_map);
  return s;
}

int main(void) { return check_run(map_file_suite()); }
