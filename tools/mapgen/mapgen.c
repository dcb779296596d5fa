/* mapgen: writes a grid map of one of the Moving AI benchmarks' synthetic
 * kinds and its problem list, deterministically from a seed (kinds.h).
 *
 *   mapgen KIND SEED OUT.map OUT.scen [problems]   (KIND: maze, rooms, random,
 *                                                   mixed; 1000 problems)
 *
 * The .scen names the map by OUT.map's file name, as the benchmark's files
 * name theirs. Prints the map's size, its blocked cells and the problems'
 * buckets. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinds.h"

static int usage(void) {
  fprintf(stderr, "usage: mapgen maze|rooms|random|mixed SEED OUT.map OUT.scen [problems (1000)]\n"
                  "       mapgen --version\n");
  return 2;
}

static int write_file(const char *path, const mapgen_map *m, const char *map_name, const mapgen_problem *p,
                      uint32_t n) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "mapgen: %s: %s\n", path, strerror(errno));
    return -1;
  }
  int rc = p ? mapgen_write_scen(f, map_name, m, p, n) : mapgen_write_map(f, m);
  if (fclose(f) != 0 || rc != 0) {
    fprintf(stderr, "mapgen: %s: write error\n", path);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("mapgen %s\n", STEERD_VERSION);
    return 0;
  }
  if (argc < 5 || argc > 6)
    return usage();
  int kind = mapgen_kind_parse(argv[1]);
  char *end;
  errno = 0;
  unsigned long long seed = strtoull(argv[2], &end, 0);
  unsigned long n = argc > 5 ? strtoul(argv[5], NULL, 10) : 1000;
  if (kind < 0 || errno || *end || !*argv[2] || n == 0 || n > 10000000)
    return usage();
  mapgen_map m;
  if (mapgen_make((mapgen_kind)kind, seed, &m) != 0) {
    fprintf(stderr, "mapgen: out of memory\n");
    return 1;
  }
  mapgen_problem *p = malloc(n * sizeof *p);
  if (!p || mapgen_problems(&m, seed, (uint32_t)n, p) != 0) {
    fprintf(stderr, "mapgen: out of memory, or no two connected free cells\n");
    return 1;
  }
  const char *name = strrchr(argv[3], '/') ? strrchr(argv[3], '/') + 1 : argv[3];
  if (write_file(argv[3], &m, NULL, NULL, 0) != 0 || write_file(argv[4], &m, name, p, (uint32_t)n) != 0)
    return 1;
  size_t blocked = 0;
  for (size_t i = 0; i < (size_t)m.width * m.height; i++)
    blocked += m.blocked[i];
  printf("%s seed %llu: %u x %u, %zu blocked cells (%.1f %%), %lu problems in buckets 0..%u\n", argv[1], seed,
         m.width, m.height, blocked, 100.0 * (double)blocked / ((double)m.width * m.height), n,
         p[n - 1].bucket);
  free(p);
  mapgen_free(&m);
  return 0;
}
