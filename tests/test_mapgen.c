/* test_mapgen.c: the reference octile search of tools/mapgen (octile.h) on
 * small grids with optimal lengths worked out by hand, corner cutting
 * refused; and the generated kinds: the same seed makes the same map and
 * problems, each kind has its shape, and its map loads as a --map grid map
 * within the obstacles a map holds today. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "kinds.h"
#include "map_file.h"
#include "octile.h"

/* rows of '.' and '@' into a blocked[] */
static octile_grid grid_of(const char *const *rows, uint32_t h, uint8_t *cells) {
  uint32_t w = (uint32_t)strlen(rows[0]);
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++)
      cells[y * w + x] = rows[y][x] == '@';
  return (octile_grid){w, h, cells};
}

typedef struct search_case {
  const char *rows[5];
  uint32_t h, sx, sy, gx, gy;
  uint32_t straight, diagonal; /* the optimum by hand; both UINT32_MAX: no route */
} search_case;

static const search_case cases[] = {
    /* open: two diagonals, then one diagonal and one straight */
    {{"...", "...", "..."}, 3, 0, 0, 2, 2, 0, 2},
    {{"...", "...", "..."}, 3, 0, 0, 2, 1, 1, 1},
    {{"...."}, 1, 0, 0, 3, 0, 3, 0},
    {{"...", "...", "..."}, 3, 1, 1, 1, 1, 0, 0},
    /* corner cutting: (1, 0) blocked, so (0, 0) -> (1, 1) goes round in two
     * straight moves, not one diagonal past the corner */
    {{".@", ".."}, 2, 0, 0, 1, 1, 2, 0},
    /* a diagonal squeeze between two blocks: no route at all */
    {{".@", "@."}, 2, 0, 0, 1, 1, UINT32_MAX, UINT32_MAX},
    /* round a wall: no diagonal past its ends, six straight moves (corner
     * cutting would give 2 + 2 sqrt 2) */
    {{".....", ".@@@.", "....."}, 3, 2, 0, 2, 2, 6, 0},
    /* a wall with its end cells diagonal-free: (0, 0) -> (4, 2) over the
     * open row: 2 straight, 2 diagonal */
    {{".....", "...@.", "....."}, 3, 0, 0, 4, 2, 2, 2},
    /* a blocked start or goal */
    {{"@..", "...", "..."}, 3, 0, 0, 2, 2, UINT32_MAX, UINT32_MAX},
    {{"...", "...", "..@"}, 3, 0, 0, 2, 2, UINT32_MAX, UINT32_MAX},
    /* a bend: down the left column, then along the bottom row, straight all
     * the way: the diagonal from (0, 1) to (1, 2) would cut the corner of
     * (1, 1) */
    {{".@@@", ".@@@", "...."}, 3, 0, 0, 3, 2, 5, 0},
    /* with (1, 1) free that diagonal is allowed, the first move is still
     * straight (the diagonal to (1, 1) cuts (1, 0)) */
    {{".@@@", "....", "...."}, 3, 0, 0, 3, 2, 3, 1},
};

START_TEST(test_search_by_hand) {
  const search_case *c = &cases[_i];
  uint8_t cells[64];
  octile_grid g = grid_of(c->rows, c->h, cells);
  octile_search *s = octile_search_create(g.width, g.height);
  ck_assert_ptr_nonnull(s);
  double got = octile_shortest(s, &g, c->sx, c->sy, c->gx, c->gy, NULL);
  if (c->straight == UINT32_MAX)
    ck_assert_msg(got == -1.0, "case %d: %.8f, not unreachable", _i, got);
  else
    ck_assert_msg(got == (double)c->straight + (double)c->diagonal * OCTILE_SQRT2,
                  "case %d: %.8f, not %u + %u sqrt 2", _i, got, c->straight, c->diagonal);
  /* and the other way round: the rule is symmetric */
  double back = octile_shortest(s, &g, c->gx, c->gy, c->sx, c->sy, NULL);
  ck_assert_msg(back == got, "case %d: back %.8f, there %.8f", _i, back, got);
  octile_search_destroy(s);
}
END_TEST

/* On an open grid the optimum is the octile distance itself; searches reuse
 * one table without clearing it. */
START_TEST(test_search_open_grid) {
  uint8_t cells[20 * 20] = {0};
  octile_grid g = {20, 20, cells};
  octile_search *s = octile_search_create(20, 20);
  ck_assert_ptr_nonnull(s);
  for (uint32_t k = 0; k < 200; k++) {
    uint32_t sx = (k * 7) % 20, sy = (k * 13) % 20, gx = (k * 3 + 5) % 20, gy = (k * 11 + 2) % 20;
    uint32_t dx = sx > gx ? sx - gx : gx - sx, dy = sy > gy ? sy - gy : gy - sy;
    ck_assert(octile_shortest(s, &g, sx, sy, gx, gy, NULL) == octile_distance(dx, dy));
  }
  octile_search_destroy(s);
}
END_TEST

START_TEST(test_components) {
  const char *rows[] = {".@..", "@.@.", "..@@", "@@.."};
  uint8_t cells[16];
  octile_grid g = grid_of(rows, 4, cells);
  uint32_t label[16];
  /* (0,0) alone; (2,0),(3,0),(3,1); (1,1),(0,2),(1,2); (2,3),(3,3) */
  ck_assert_uint_eq(octile_components(&g, label), 4);
  ck_assert_uint_eq(label[0], 0);
  ck_assert_uint_eq(label[1], UINT32_MAX);
  ck_assert_uint_eq(label[2], 1);
  ck_assert_uint_eq(label[7], 1);
  ck_assert_uint_eq(label[5], 2);
  ck_assert_uint_eq(label[9], 2);
  ck_assert_uint_eq(label[14], 3);
}
END_TEST

/* Each kind twice from seed 7 and once from seed 8: the same cells and
 * problems, then other ones. */
START_TEST(test_kinds_deterministic) {
  mapgen_kind k = (mapgen_kind)_i;
  mapgen_map a, b, c;
  ck_assert_int_eq(mapgen_make(k, 7, &a), 0);
  ck_assert_int_eq(mapgen_make(k, 7, &b), 0);
  ck_assert_int_eq(mapgen_make(k, 8, &c), 0);
  size_t n = (size_t)a.width * a.height;
  ck_assert_uint_eq(a.width, k == MAPGEN_MIXED ? 512 : 400);
  ck_assert_uint_eq(a.height, a.width);
  ck_assert(memcmp(a.cells, b.cells, n) == 0);
  ck_assert(memcmp(a.cells, c.cells, n) != 0);
  enum { N = 50 };
  mapgen_problem p[N], q[N];
  ck_assert_int_eq(mapgen_problems(&a, 7, N, p), 0);
  ck_assert_int_eq(mapgen_problems(&b, 7, N, q), 0);
  ck_assert(memcmp(p, q, sizeof p) == 0);
  octile_grid g = {a.width, a.height, a.blocked};
  octile_search *s = octile_search_create(a.width, a.height);
  for (int i = 0; i < N; i++) {
    ck_assert(i == 0 || p[i].bucket >= p[i - 1].bucket);
    ck_assert_uint_eq(p[i].bucket, (uint32_t)(p[i].optimal / 4.0));
    ck_assert(p[i].optimal > 0.0);
    ck_assert(p[i].optimal == octile_shortest(s, &g, p[i].sx, p[i].sy, p[i].gx, p[i].gy, NULL));
  }
  octile_search_destroy(s);
  mapgen_free(&a);
  mapgen_free(&b);
  mapgen_free(&c);
}
END_TEST

/* What makes each kind that kind. */
START_TEST(test_kind_shapes) {
  mapgen_map m;
  static uint32_t label[512 * 512];
  size_t blocked;
  /* maze: a perfect maze of 80 x 80 cells of 4 x 4 has 6 400 * 16 cells and
   * 6 399 passages of 4, all one component */
  ck_assert_int_eq(mapgen_make(MAPGEN_MAZE, 3, &m), 0);
  blocked = 0;
  for (size_t i = 0; i < 400 * 400; i++)
    blocked += m.blocked[i];
  ck_assert_uint_eq(400 * 400 - blocked, 6400 * 16 + 6399 * 4);
  ck_assert_uint_eq(octile_components(&(octile_grid){400, 400, m.blocked}, label), 1);
  mapgen_free(&m);
  /* rooms: every cell off the wall lines free, every room reachable */
  ck_assert_int_eq(mapgen_make(MAPGEN_ROOMS, 3, &m), 0);
  for (uint32_t y = 0; y < 400; y++)
    for (uint32_t x = 0; x < 400; x++)
      if (x % 41 != 40 && y % 41 != 40)
        ck_assert(!m.blocked[y * 400 + x]);
  ck_assert(m.blocked[40]);
  ck_assert_uint_eq(octile_components(&(octile_grid){400, 400, m.blocked}, label), 1);
  mapgen_free(&m);
  /* random: a third blocked */
  ck_assert_int_eq(mapgen_make(MAPGEN_RANDOM, 3, &m), 0);
  blocked = 0;
  for (size_t i = 0; i < 400 * 400; i++)
    blocked += m.blocked[i];
  ck_assert(fabs((double)blocked / (400.0 * 400.0) - 0.33) < 0.01);
  mapgen_free(&m);
}
END_TEST

/* The maps through the --map parser: maze, rooms and mixed fit the obstacles
 * a map holds today (random needs more than 16 384 rectangles). */
START_TEST(test_kinds_load) {
  mapgen_kind k = (mapgen_kind)_i;
  mapgen_map m;
  ck_assert_int_eq(mapgen_make(k, 1, &m), 0);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(mapgen_write_map(f, &m), 0);
  fclose(f);
  steer_map *sm = steer_map_create(v2(0, 0), v2((float)m.width, (float)m.height), 8.0f);
  ck_assert_ptr_nonnull(sm);
  char err[256] = "";
  int rc = steerd_map_parse_movingai(text, len, sm, err, sizeof err);
  if (k == MAPGEN_RANDOM && STEER_MAP_MAX_OBSTACLES < 32768) {
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(err, "rectangles, more than the") != NULL, "%s", err);
  } else {
    ck_assert_msg(rc == 0, "%s: %s", mapgen_kind_name(k), err);
    /* every blocked cell's centre is inside, every free one's is not */
    for (uint32_t y = 0; y < m.height; y += 3)
      for (uint32_t x = 0; x < m.width; x++)
        ck_assert(steer_map_inside(sm, v2((float)x + 0.5f, (float)y + 0.5f)) == m.blocked[y * m.width + x]);
  }
  steer_map_destroy(sm);
  free(text);
  mapgen_free(&m);
}
END_TEST

static Suite *mapgen_suite(void) {
  Suite *s = suite_create("mapgen");
  TCase *t = check_tcase(s, "octile", 60);
  tcase_add_loop_test(t, test_search_by_hand, 0, (int)(sizeof cases / sizeof cases[0]));
  tcase_add_test(t, test_search_open_grid);
  tcase_add_test(t, test_components);
  TCase *k = check_tcase(s, "kinds", 300);
  tcase_add_loop_test(k, test_kinds_deterministic, 0, MAPGEN_KIND_COUNT);
  tcase_add_test(k, test_kind_shapes);
  tcase_add_loop_test(k, test_kinds_load, 0, MAPGEN_KIND_COUNT);
  return s;
}

int main(void) { return check_run(mapgen_suite()); }
