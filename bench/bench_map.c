/* bench_map.c: the map on the wire (PROTOCOL.md 17), measured, not tested.
 *
 *   bench_map encode   MAP parts of maps of 100, 1 000 and 16 384 obstacles: bytes,
 *                      parts, encode (server) and decode + copy (client) time per
 *                      obstacle; one MAP_CHANGED encoded and applied
 *   bench_map stream   the real server with a map file of N obstacles (2 000 by
 *                      default, or the argument): time from connect to a current
 *                      copy in the client library, over ENet on loopback
 *
 * Prints tables for BENCHMARKS.md ("The map on the wire"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "client.h"
#include "map.h"
#include "map_admin.h"
#include "map_msg.h"
#include "mapcopy.h"
#include "steerd_proc.h"

/* A level of n obstacles on a grid: an 8-point polygon, a 3-point wall and a circle in turn. */
static steer_map *make_map(uint32_t n, float half) {
  steer_map *m = steer_map_create(v2(-half, -half), v2(half, half), 8.0f);
  uint32_t side = 1;
  while (side * side < n)
    side++;
  float step = 2.0f * half / (float)side;
  for (uint32_t i = 0; i < n; i++) {
    float cx = -half + step * ((float)(i % side) + 0.5f), cy = -half + step * ((float)(i / side) + 0.5f);
    float r = step * 0.3f;
    vec2 p[8];
    steer_obstacle_desc d = {STEER_OBSTACLE_POLYGON, 8, p, 0.0f};
    if (i % 3 == 0) {
      for (int k = 0; k < 8; k++)
        p[k] = v2(cx + r * cosf(0.785398f * (float)k), cy + r * sinf(0.785398f * (float)k));
    } else if (i % 3 == 1) {
      d.kind = STEER_OBSTACLE_WALL;
      d.count = 3;
      p[0] = v2(cx - r, cy);
      p[1] = v2(cx, cy + r);
      p[2] = v2(cx + r, cy);
    } else {
      d.kind = STEER_OBSTACLE_CIRCLE;
      d.count = 1;
      p[0] = v2(cx, cy);
      d.radius = r;
    }
    if (steer_map_add(m, i + 1u, &d) != STEER_OK) {
      fprintf(stderr, "bench_map: obstacle %u refused\n", i + 1u);
      exit(1);
    }
  }
  return m;
}

static uint8_t part[PROTO_MAP_PART_BYTES];
static proto_obstacle obs[1024];
static proto_vec2 pts[4096];

static void bench_encode(void) {
  printf("| obstacles | segments | MAP bytes | parts | bytes/obstacle | encode ns/obstacle | decode + copy "
         "ns/obstacle |\n");
  printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  const uint32_t sizes[3] = {100, 1000, 16384};
  for (int s = 0; s < 3; s++) {
    uint32_t n = sizes[s];
    steer_map *m = make_map(n, 1000.0f);
    steerd_mapsync *ms = steerd_mapsync_create(1);
    steerd_mapcopy *copy = steerd_mapcopy_create(n, 8u * n);
    int reps = n >= 10000 ? 5 : 50;
    double enc = 0.0, dec = 0.0;
    size_t bytes = 0;
    uint32_t parts = 0;
    for (int rep = 0; rep < reps; rep++) {
      steerd_mapsync_start(ms, 0);
      bytes = 0;
      parts = 0;
      for (;;) {
        double t0 = bench_now_s(CLOCK_MONOTONIC);
        size_t len = steerd_mapsync_next(ms, 0, m, part, sizeof part);
        enc += bench_now_s(CLOCK_MONOTONIC) - t0;
        if (len == 0)
          break;
        bytes += len;
        parts++;
        t0 = bench_now_s(CLOCK_MONOTONIC);
        proto_map_header h;
        uint32_t count;
        if (proto_decode_map(part, len, &h, obs, 1024, &count, pts, 4096, NULL) != 0 ||
            steerd_mapcopy_part(copy, &h, obs, count) > STEERD_MAPCOPY_COMPLETE) {
          fprintf(stderr, "bench_map: a part did not decode\n");
          exit(1);
        }
        dec += bench_now_s(CLOCK_MONOTONIC) - t0;
      }
    }
    if (!steerd_mapcopy_current(copy) || steerd_mapcopy_count(copy) != n) {
      fprintf(stderr, "bench_map: the copy is not the map\n");
      exit(1);
    }
    printf("| %u | %u | %zu | %u | %.1f | %.0f | %.0f |\n", n, steer_map_segment_count(m), bytes, parts,
           (double)bytes / n, enc / reps / n * 1e9, dec / reps / n * 1e9);
    steerd_mapcopy_destroy(copy);
    steerd_mapsync_destroy(ms);
    steer_map_destroy(m);
  }
  /* One change: a door (2-point wall) added, encoded and applied. */
  proto_vec2 door[2] = {{10.0f, 6.0f}, {10.0f, 8.0f}};
  proto_obstacle add = {999999, STEER_OBSTACLE_WALL, 2, 0.0f, door};
  proto_map_changed c = {1, 1240, 0, NULL, 1, &add};
  size_t len = proto_encode_map_changed(part, sizeof part, &c);
  printf("\nMAP_CHANGED of one door (a 2-point wall): %zu bytes.\n", len);
}

static void bench_stream(uint32_t n) {
  steer_map *m = make_map(n, 400.0f);
  char path[64];
  snprintf(path, sizeof path, "/tmp/bench_map_%d.json", (int)getpid());
  FILE *f = fopen(path, "w");
  fprintf(f, "{\"format\": \"steerd-map\", \"version\": 1, \"obstacles\": [");
  for (uint32_t i = 0; i < steer_map_count(m); i++) {
    uint32_t id;
    steer_obstacle_desc d;
    steer_map_get(m, i, &id, &d);
    fprintf(f, "%s{\"id\": %u, \"type\": \"%s\", ", i ? "," : "", id, proto_obstacle_kind_name(d.kind));
    if (d.kind == STEER_OBSTACLE_CIRCLE) {
      fprintf(f, "\"center\": [%.9g, %.9g], \"radius\": %.9g}", (double)d.points[0].x, (double)d.points[0].y,
              (double)d.radius);
      continue;
    }
    fprintf(f, "\"points\": [");
    for (uint32_t k = 0; k < d.count; k++)
      fprintf(f, "%s[%.9g, %.9g]", k ? "," : "", (double)d.points[k].x, (double)d.points[k].y);
    fprintf(f, "]}");
  }
  fprintf(f, "]}\n");
  fclose(f);
  steer_map_destroy(m);
  const char *extra[] = {"--no-demo", "--map", path, "--world", "-500,-500,500,500", NULL};
  steerd_proc p;
  if (steerd_proc_start(&p, STEERD_BINARY, extra, 120000) != 0) {
    fprintf(stderr, "bench_map: the server did not start\n");
    exit(1);
  }
  printf("| obstacles | connect to WELCOME ms | WELCOME to a current copy ms | MAP parts |\n");
  printf("|---:|---:|---:|---:|\n");
  for (int run = 0; run < 3; run++) {
    steerd_client_config cfg = steerd_client_default_config();
    cfg.map_obstacles = n;
    cfg.map_points = 8u * n;
    steerd_client *c = steerd_client_create(&cfg);
    double t0 = bench_now_s(CLOCK_MONOTONIC);
    if (steerd_client_connect(c, "127.0.0.1", p.port) != 0) {
      fprintf(stderr, "bench_map: connect failed\n");
      exit(1);
    }
    double t1 = bench_now_s(CLOCK_MONOTONIC);
    const steerd_mapcopy *copy = steerd_client_map(c);
    while (!steerd_mapcopy_current(copy) && bench_now_s(CLOCK_MONOTONIC) - t1 < 60.0)
      steerd_client_service(c, 5);
    double t2 = bench_now_s(CLOCK_MONOTONIC);
    steerd_client_stats st;
    steerd_client_get_stats(c, &st);
    if (!steerd_mapcopy_current(copy) || steerd_mapcopy_count(copy) != n) {
      fprintf(stderr, "bench_map: no complete map\n");
      exit(1);
    }
    printf("| %u | %.1f | %.1f | %llu |\n", n, (t1 - t0) * 1e3, (t2 - t1) * 1e3,
           (unsigned long long)st.map_parts);
    steerd_client_disconnect(c, 500);
    steerd_client_destroy(c);
  }
  steerd_proc_stop(&p, 3000);
  unlink(path);
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "encode";
  if (strcmp(what, "encode") == 0) {
    bench_encode();
    return 0;
  }
  if (strcmp(what, "stream") == 0) {
    bench_stream(argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 2000u);
    return 0;
  }
  fprintf(stderr, "usage: bench_map [encode | stream [N]]\n");
  return 2;
}
