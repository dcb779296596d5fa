/* fuzz_map_file.c: the JSON map-file parsers (server/map_file.c, and
 * map_tiled.c for what looks like a Tiled map) on arbitrary bytes. Checks: it never crashes; a refusal comes
 * with an error message; an accepted file gives a map whose every obstacle passes steer_map_check again (so
 * the parser adds nothing steer_map_add would refuse) and whose queries (inside, free, cast, move) run on it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "map_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  steer_map *m = steer_map_create(v2(-100, -100), v2(100, 100), 8.0f);
  FUZZ_CHECK(m != NULL);
  char err[256];
  err[0] = '\0';
  const char *text = (const char *)data;
  int rc = steerd_map_is_tiled(text, size) ? steerd_map_parse_tiled(text, size, NULL, m, err, sizeof err)
                                           : steerd_map_parse(text, size, m, err, sizeof err);
  if (rc != 0) {
    FUZZ_CHECK(err[0] != '\0');
  } else {
    steer_map *again = steer_map_create(v2(-100, -100), v2(100, 100), 8.0f);
    FUZZ_CHECK(again != NULL);
    for (uint32_t i = 0; i < steer_map_count(m); i++) {
      uint32_t id;
      steer_obstacle_desc d;
      FUZZ_CHECK(steer_map_get(m, i, &id, &d) == STEER_OK);
      FUZZ_CHECK(steer_map_add(again, id, &d) == STEER_OK);
    }
    FUZZ_CHECK(steer_map_hash(again, 1) == steer_map_hash(m, 1));
    steer_map_destroy(again);
    vec2 p1 = v2(30, 30);
    vec2 v = v2(1, 1);
    float t;
    vec2 n;
    (void)steer_map_inside(m, v2(0, 0));
    (void)steer_map_free(m, v2(0, 0), 0.5f, 0.0f);
    (void)steer_map_cast(m, v2(-30, -30), v2(60, 60), 0.5f, &t, &n);
    if (steer_map_free(m, v2(-30, -30), 0.5f, 0.0f)) {
      steer_map_move(m, v2(-30, -30), &p1, 0.5f, &v, v2(-100, -100), v2(100, 100));
      FUZZ_CHECK(steer_map_free(m, p1, 0.5f - 1e-3f, 0.0f));
    }
  }
  steer_map_destroy(m);
  return 0;
}
