/* grid.c: uniform grid built by counting sort; k-nearest queries. */
#include "grid.h"

#include <stdlib.h>
#include <string.h>

#include "world.h"

int steer_grid_init(steer_grid *g, vec2 min, vec2 max, float cell, uint32_t capacity) {
  memset(g, 0, sizeof(*g));
  if (!(cell > 0.0f) || !(max.x > min.x) || !(max.y > min.y) || capacity == 0)
    return STEER_EINVAL;
  double w = (double)max.x - min.x, h = (double)max.y - min.y;
  /* Grow the cell until the cell count fits the cap. */
  while ((w / cell + 1.0) * (h / cell + 1.0) > (double)STEER_GRID_MAX_CELLS)
    cell *= 2.0f;
  g->min = min;
  g->cell = cell;
  g->inv_cell = 1.0f / cell;
  g->cols = (uint32_t)(w / cell) + 1;
  g->rows = (uint32_t)(h / cell) + 1;
  g->capacity = capacity;
  size_t cells = (size_t)g->cols * g->rows;
  g->cell_start = calloc(cells + 1, sizeof(uint32_t));
  g->items = malloc(capacity * sizeof(uint32_t));
  g->item_cell = malloc(capacity * sizeof(uint32_t));
  g->sx = malloc(capacity * sizeof(float));
  g->sy = malloc(capacity * sizeof(float));
  if (!g->cell_start || !g->items || !g->item_cell || !g->sx || !g->sy) {
    steer_grid_free(g);
    return STEER_ENOMEM;
  }
  return STEER_OK;
}

void steer_grid_free(steer_grid *g) {
  free(g->cell_start);
  free(g->items);
  free(g->item_cell);
  free(g->sx);
  free(g->sy);
  memset(g, 0, sizeof(*g));
}

static inline uint32_t grid_col(const steer_grid *g, float x) {
  float c = (x - g->min.x) * g->inv_cell;
  if (!(c > 0.0f))
    return 0; /* also catches NaN */
  /* Clamp before converting: a float beyond UINT32_MAX does not convert. */
  return c < (float)g->cols ? (uint32_t)c : g->cols - 1;
}

static inline uint32_t grid_row(const steer_grid *g, float y) {
  float r = (y - g->min.y) * g->inv_cell;
  if (!(r > 0.0f))
    return 0;
  return r < (float)g->rows ? (uint32_t)r : g->rows - 1;
}

void steer_grid_build(steer_grid *g, const float *px, const float *py, uint32_t count) {
  uint32_t cells = g->cols * g->rows;
  uint32_t *start = g->cell_start;
  memset(start, 0, (cells + 1) * sizeof(uint32_t));
  for (uint32_t i = 0; i < count; i++) {
    uint32_t c = grid_row(g, py[i]) * g->cols + grid_col(g, px[i]);
    g->item_cell[i] = c;
    start[c + 1]++;
  }
  for (uint32_t c = 0; c < cells; c++)
    start[c + 1] += start[c];
  /* Scatter with start[c] as the running cursor; afterwards start[c] holds the end
   * of cell c, which is the start of cell c + 1, so shift back by one cell. */
  for (uint32_t i = 0; i < count; i++) {
    uint32_t slot = start[g->item_cell[i]]++;
    g->items[slot] = i;
    g->sx[slot] = px[i];
    g->sy[slot] = py[i];
  }
  memmove(start + 1, start, cells * sizeof(uint32_t));
  start[0] = 0;
}

uint32_t steer_grid_nearest(const steer_grid *g, vec2 p, float radius, uint32_t exclude, uint32_t *out,
                            float *out_d2, uint32_t max) {
  if (max == 0 || !(radius > 0.0f))
    return 0;
  float r2 = radius * radius;
  uint32_t c0 = grid_col(g, p.x - radius), c1 = grid_col(g, p.x + radius);
  uint32_t r0 = grid_row(g, p.y - radius), r1 = grid_row(g, p.y + radius);
  uint32_t n = 0;
  float worst = r2; /* admission threshold: r2 until the list is full */
  float d2s[256];
  float *d2buf = out_d2 ? out_d2 : d2s;
  if (!out_d2 && max > 256)
    max = 256;
  /* Every row in [r0, r1] can hold a point within the radius: edge rows also
   * hold the points clamped in from outside the bounds, whatever their distance
   * from the row's own span, so no row is skipped on geometry. */
  for (uint32_t row = r0; row <= r1; row++) {
    const uint32_t *rs = g->cell_start + (size_t)row * g->cols;
    for (uint32_t k = rs[c0]; k < rs[c1 + 1]; k++) {
      float dx = g->sx[k] - p.x, ddy = g->sy[k] - p.y;
      float d2 = dx * dx + ddy * ddy;
      if (d2 >= worst)
        continue;
      uint32_t idx = g->items[k];
      if (idx == exclude)
        continue;
      /* Insertion into the sorted list; equal distances keep scan order. */
      uint32_t j = n < max ? n++ : max - 1;
      while (j > 0 && d2buf[j - 1] > d2) {
        d2buf[j] = d2buf[j - 1];
        out[j] = out[j - 1];
        j--;
      }
      d2buf[j] = d2;
      out[j] = idx;
      if (n == max)
        worst = d2buf[max - 1];
    }
  }
  return n;
}
