/* map_json.c: see map_json.h. */
#include "map_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world.h" /* error codes */

typedef struct jbuf {
  char *p;
  size_t len, cap, limit;
  int over, nomem;
} jbuf;

static void put(jbuf *b, const char *s, size_t n) {
  if (b->over || b->nomem)
    return;
  if (b->limit && b->len + n > b->limit) {
    b->over = 1;
    return;
  }
  if (b->len + n + 1u > b->cap) {
    size_t cap = b->cap ? b->cap : 4096u;
    while (cap < b->len + n + 1u)
      cap *= 2u;
    char *q = realloc(b->p, cap);
    if (!q) {
      b->nomem = 1;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void put_str(jbuf *b, const char *s) { put(b, s, strlen(s)); }

/* A real as jansson 2.x dumps it (jsonp_dtostr with precision 17): "%.17g",
 * then ".0" when there is neither a point nor an exponent (else it would read
 * back as an integer), and the exponent without '+' or leading zeros. */
static void put_real(jbuf *b, double v) {
  char t[48];
  int n = snprintf(t, sizeof t, "%.17g", v);
  if (n <= 0 || (size_t)n + 3u > sizeof t) {
    b->nomem = 1; /* not a finite number the map could hold */
    return;
  }
  if (!strchr(t, '.') && !strchr(t, 'e')) {
    t[n++] = '.';
    t[n++] = '0';
    t[n] = '\0';
  }
  char *e = strchr(t, 'e');
  if (e) {
    char *start = e + 1, *end = e + 2;
    if (*start == '-')
      start++;
    while (*end == '0')
      end++;
    if (end != start) {
      memmove(start, end, (size_t)(t + n - end) + 1u);
      n -= (int)(end - start);
    }
  }
  put(b, t, (size_t)n);
}

static void put_uint(jbuf *b, uint32_t v) {
  char t[16];
  int n = snprintf(t, sizeof t, "%" PRIu32, v);
  put(b, t, (size_t)n);
}

static void put_point(jbuf *b, vec2 p) {
  put(b, "[", 1);
  put_real(b, (double)p.x);
  put(b, ",", 1);
  put_real(b, (double)p.y);
  put(b, "]", 1);
}

char *steerd_map_json(const steer_map *m, vec2 lo, vec2 hi, const char *type, size_t limit, size_t *len) {
  static const char *const kinds[STEER_OBSTACLE_KIND_COUNT] = {"circle", "polygon", "wall"};
  jbuf b = {NULL, 0, 0, limit, 0, 0};
  put(&b, "{", 1);
  if (type) {
    put_str(&b, "\"type\":\"");
    put_str(&b, type);
    put_str(&b, "\",");
  }
  put_str(&b, "\"version\":");
  put_uint(&b, m ? steer_map_version(m) : 0u);
  put_str(&b, ",\"bounds_m\":[");
  put_real(&b, (double)lo.x);
  put(&b, ",", 1);
  put_real(&b, (double)lo.y);
  put(&b, ",", 1);
  put_real(&b, (double)hi.x);
  put(&b, ",", 1);
  put_real(&b, (double)hi.y);
  put_str(&b, "],\"obstacles\":[");
  uint32_t n = m ? steer_map_count(m) : 0u, written = 0;
  for (uint32_t i = 0; i < n && !b.over && !b.nomem; i++) {
    uint32_t id;
    steer_obstacle_desc d;
    if (steer_map_get(m, i, &id, &d) != STEER_OK || d.kind >= STEER_OBSTACLE_KIND_COUNT)
      continue;
    put_str(&b, written++ ? ",{\"id\":" : "{\"id\":");
    put_uint(&b, id);
    put_str(&b, ",\"kind\":\"");
    put_str(&b, kinds[d.kind]);
    put_str(&b, "\",\"points_m\":[");
    for (uint32_t k = 0; k < d.count; k++) {
      if (k)
        put(&b, ",", 1);
      put_point(&b, d.points[k]);
    }
    put(&b, "]", 1);
    if (d.kind == STEER_OBSTACLE_CIRCLE) {
      put_str(&b, ",\"radius_m\":");
      put_real(&b, (double)d.radius);
    }
    put(&b, "}", 1);
  }
  put_str(&b, "]}");
  if (b.over || b.nomem) {
    free(b.p);
    *len = b.over ? limit + 1u : 0u;
    return NULL;
  }
  *len = b.len;
  return b.p;
}
