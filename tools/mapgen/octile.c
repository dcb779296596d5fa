/* octile.c: A* on the 8-connected grid without corner cutting (see octile.h). */
#include "octile.h"

#include <stdlib.h>

/* A node's cost so far is a count of straight and diagonal moves. */
typedef struct node {
  uint32_t straight, diagonal;
  uint32_t stamp; /* the search that reached it: the counts are of that search */
} node;

typedef struct heap_item {
  double f;
  uint32_t cell;
} heap_item;

struct octile_search {
  uint32_t cells;
  uint32_t search; /* bumped by each search: a node of another search is unreached */
  node *nodes;
  uint32_t *closed; /* search that closed the cell */
  heap_item *heap;
  uint32_t heap_len, heap_cap;
};

double octile_distance(uint32_t dx, uint32_t dy) {
  uint32_t lo = dx < dy ? dx : dy, hi = dx < dy ? dy : dx;
  return (double)(hi - lo) + (double)lo * OCTILE_SQRT2;
}

static double cost(const node *n) { return (double)n->straight + (double)n->diagonal * OCTILE_SQRT2; }

octile_search *octile_search_create(uint32_t width, uint32_t height) {
  octile_search *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->cells = width * height;
  s->nodes = calloc(s->cells ? s->cells : 1, sizeof *s->nodes);
  s->closed = calloc(s->cells ? s->cells : 1, sizeof *s->closed);
  s->heap_cap = 1024;
  s->heap = malloc(s->heap_cap * sizeof *s->heap);
  if (!s->nodes || !s->closed || !s->heap) {
    octile_search_destroy(s);
    return NULL;
  }
  return s;
}

void octile_search_destroy(octile_search *s) {
  if (!s)
    return;
  free(s->nodes);
  free(s->closed);
  free(s->heap);
  free(s);
}

/* Ties on f go to the lower cell index, so a search expands in one order. */
static int before(const heap_item *a, const heap_item *b) {
  return a->f < b->f || (a->f == b->f && a->cell < b->cell);
}

static int heap_push(octile_search *s, double f, uint32_t cell) {
  if (s->heap_len == s->heap_cap) {
    heap_item *more = realloc(s->heap, 2 * (size_t)s->heap_cap * sizeof *more);
    if (!more)
      return -1;
    s->heap = more;
    s->heap_cap *= 2;
  }
  uint32_t i = s->heap_len++;
  heap_item it = {f, cell};
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (!before(&it, &s->heap[p]))
      break;
    s->heap[i] = s->heap[p];
    i = p;
  }
  s->heap[i] = it;
  return 0;
}

static heap_item heap_pop(octile_search *s) {
  heap_item top = s->heap[0], last = s->heap[--s->heap_len];
  uint32_t i = 0, n = s->heap_len;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && before(&s->heap[c + 1], &s->heap[c]))
      c++;
    if (!before(&s->heap[c], &last))
      break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (n)
    s->heap[i] = last;
  return top;
}

double octile_shortest(octile_search *s, const octile_grid *g, uint32_t sx, uint32_t sy, uint32_t gx,
                       uint32_t gy, uint32_t *expanded) {
  uint32_t w = g->width, h = g->height, done = 0;
  if (expanded)
    *expanded = 0;
  if (sx >= w || sy >= h || gx >= w || gy >= h || w * h > s->cells)
    return -1.0;
  uint32_t start = sy * w + sx, goal = gy * w + gx;
  if (g->blocked[start] || g->blocked[goal])
    return -1.0;
  if (start == goal)
    return 0.0;
  if (++s->search == 0) { /* the stamps wrapped: start them over */
    for (uint32_t i = 0; i < s->cells; i++)
      s->nodes[i].stamp = s->closed[i] = 0;
    s->search = 1;
  }
  uint32_t id = s->search;
  s->heap_len = 0;
  s->nodes[start] = (node){0, 0, id};
  if (heap_push(s, octile_distance(sx > gx ? sx - gx : gx - sx, sy > gy ? sy - gy : gy - sy), start) != 0)
    return -1.0;
  static const int dx[8] = {1, -1, 0, 0, 1, 1, -1, -1};
  static const int dy[8] = {0, 0, 1, -1, 1, -1, 1, -1};
  double found = -1.0;
  while (s->heap_len > 0) {
    heap_item it = heap_pop(s);
    uint32_t c = it.cell;
    if (s->closed[c] == id)
      continue; /* a stale entry: the cell was closed with a shorter cost */
    s->closed[c] = id;
    done++;
    if (c == goal) {
      found = cost(&s->nodes[c]);
      break;
    }
    uint32_t cx = c % w, cy = c / w;
    node here = s->nodes[c];
    for (int k = 0; k < 8; k++) {
      int64_t nx = (int64_t)cx + dx[k], ny = (int64_t)cy + dy[k];
      if (nx < 0 || ny < 0 || nx >= w || ny >= h)
        continue;
      uint32_t n = (uint32_t)ny * w + (uint32_t)nx;
      if (g->blocked[n] || s->closed[n] == id)
        continue;
      /* a diagonal passes between (nx, cy) and (cx, ny): both must be free */
      if (k >= 4 && (g->blocked[cy * w + (uint32_t)nx] || g->blocked[(uint32_t)ny * w + cx]))
        continue;
      node next = {here.straight + (k < 4), here.diagonal + (k >= 4), id};
      if (s->nodes[n].stamp == id && cost(&s->nodes[n]) <= cost(&next))
        continue;
      s->nodes[n] = next;
      uint32_t ddx = (uint32_t)(nx > gx ? nx - gx : gx - nx), ddy = (uint32_t)(ny > gy ? ny - gy : gy - ny);
      if (heap_push(s, cost(&next) + octile_distance(ddx, ddy), n) != 0)
        return -1.0;
    }
  }
  if (expanded)
    *expanded = done;
  return found;
}

uint32_t octile_components(const octile_grid *g, uint32_t *label) {
  uint32_t w = g->width, h = g->height, n = w * h, count = 0;
  uint32_t *stack = malloc((n ? n : 1) * sizeof *stack);
  if (!stack)
    return UINT32_MAX;
  for (uint32_t i = 0; i < n; i++)
    label[i] = UINT32_MAX;
  for (uint32_t i = 0; i < n; i++) {
    if (g->blocked[i] || label[i] != UINT32_MAX)
      continue;
    uint32_t top = 0;
    stack[top++] = i;
    label[i] = count;
    while (top > 0) {
      uint32_t c = stack[--top], x = c % w, y = c / w;
      uint32_t next[4], k = 0;
      if (x > 0)
        next[k++] = c - 1;
      if (x + 1 < w)
        next[k++] = c + 1;
      if (y > 0)
        next[k++] = c - w;
      if (y + 1 < h)
        next[k++] = c + w;
      for (uint32_t j = 0; j < k; j++)
        if (!g->blocked[next[j]] && label[next[j]] == UINT32_MAX) {
          label[next[j]] = count;
          stack[top++] = next[j];
        }
    }
    count++;
  }
  free(stack);
  return count;
}
