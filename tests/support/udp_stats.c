/* udp_stats.c: see udp_stats.h. */
#define _POSIX_C_SOURCE 200809L
#include "udp_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t udp_rcvbuf_errors(void) {
  FILE *f = fopen("/proc/net/snmp", "r");
  char head[1024], line[1024];
  uint64_t v = 0;
  if (!f)
    return 0;
  /* Pairs of lines: the field names, then their values. */
  while (fgets(head, sizeof head, f) && fgets(line, sizeof line, f)) {
    if (strncmp(head, "Udp:", 4) != 0)
      continue;
    char *hs, *ls, *h = strtok_r(head, " \n", &hs), *l = strtok_r(line, " \n", &ls);
    for (; h && l; h = strtok_r(NULL, " \n", &hs), l = strtok_r(NULL, " \n", &ls))
      if (!strcmp(h, "RcvbufErrors"))
        v = strtoull(l, NULL, 10);
    break;
  }
  fclose(f);
  return v;
}
