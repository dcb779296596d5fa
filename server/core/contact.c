/* contact.c: the hard contact pass of the tick. Avoidance is a force, so in a
 * crush (a door, the centre of a circle swap) bodies would press into each
 * other; after integration this pass pushes overlapping bodies apart, as
 * DetourCrowd's collision handling does: a few Jacobi iterations, each
 * computing every body's displacement from the positions the iteration
 * started from (so the result does not depend on the order agents are stored
 * or visited in), then applying them. Every displacement is clipped against the
 * map and the world's bounds like any move, so no body is ever pushed into
 * geometry.
 *
 * Who takes part: agents that avoid (avoid_weight > 0, dynamic model). During
 * the steering pass each notes its contact candidates (world_contact_note):
 * the nearest of the neighbours it read that the pair can reach within the
 * tick. A pair of avoiders shares each overlap by their avoidance priorities
 * (steer_avoid_share: equal halves; a "bully" takes less); an avoider
 * overlapping an agent that does not avoid takes all of it. The pass keeps no
 * state between ticks: the lists are consumed and cleared.
 *
 * The same lists say who touches whom for STEER_ARRIVAL_SETTLE: after the
 * pushes, an arriving avoider on its last leg that touches an agent already
 * done at its goal, with no wall between their centres, is done too
 * (settles, settle). Who is done is read as the tick began, so the result
 * does not depend on the order agents are visited in either; a crowd
 * settles outward from the goal by one body a tick at most. A body's
 * candidates are its WORLD_CONTACT_MAX nearest, so in a dense pack a done
 * agent further down the list may be missed for a tick. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#define CONTACT_SIMD 1
#else
#define CONTACT_SIMD 0
#endif

#include "avoid.h"
#include "map.h"
#include "world_internal.h"

#define CONTACT_ITERATIONS 4
#define CONTACT_SLOP       1e-4f /* m, overlaps below this are left (float noise) */
#define CONTACT_REACH_PAD  0.05f /* m, beyond what the pair can close in a tick */
#define SETTLE_MARK        0xFFu /* ctc_moved: the agent settles this tick */

int world_contact_need(steer_world *w, const steer_behaviour *b) {
  if (w->ctc || !(b->avoid_weight > 0.0f))
    return STEER_OK;
  size_t n = w->cfg.max_agents;
  uint32_t *list = malloc(n * WORLD_CONTACT_MAX * sizeof(*list));
  uint8_t *cnt = calloc(n, sizeof(*cnt));
  uint8_t *moved = calloc(n, sizeof(*moved));
  uint32_t *act = malloc(n * sizeof(*act));
  float *disp = malloc(n * 4 * sizeof(*disp));
  if (!list || !cnt || !moved || !act || !disp) {
    free(list);
    free(cnt);
    free(moved);
    free(act);
    free(disp);
    return STEER_ENOMEM;
  }
  w->ctc = list;
  w->ctc_n = cnt;
  w->ctc_moved = moved;
  w->ctc_act = act;
  w->ctc_disp = disp;
  return STEER_OK;
}

void world_contact_free(steer_world *w) {
  free(w->ctc);
  free(w->ctc_n);
  free(w->ctc_moved);
  free(w->ctc_act);
  free(w->ctc_disp);
  w->ctc = NULL;
  w->ctc_n = NULL;
  w->ctc_moved = NULL;
  w->ctc_act = NULL;
  w->ctc_disp = NULL;
}

void world_contact_note(const steer_world *w, uint32_t d, const struct steer_avoid_set *nb,
                        const uint32_t *pos, uint32_t n, float dt) {
  if (!w->ctc)
    return;
  const float x = w->px[d], y = w->py[d], ovx = w->vx[d], ovy = w->vy[d];
  /* What the pair can close within the tick: their relative speed (bounded
   * by |x| + |y|, no square root) and both accelerating, padded. */
  const float pad = 2.0f * w->limits[d].max_acceleration * dt * dt + CONTACT_REACH_PAD + w->radius[d];
  const uint32_t *items = w->grid.items;
  uint32_t *list = w->ctc + (size_t)d * WORLD_CONTACT_MAX;
  uint32_t k = 0, i = 0;
#if CONTACT_SIMD
  /* Four at a time, the same arithmetic as the scalar tail; only the hits
   * look up their agent (a scattered read). */
  const __m128 vx0 = _mm_set1_ps(x), vy0 = _mm_set1_ps(y), vvx = _mm_set1_ps(ovx), vvy = _mm_set1_ps(ovy);
  const __m128 vpad = _mm_set1_ps(pad), vdt = _mm_set1_ps(dt),
               abs = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
  for (; i + 4 <= n && k < WORLD_CONTACT_MAX; i += 4) {
    __m128 dx = _mm_sub_ps(_mm_loadu_ps(nb->px + i), vx0), dy = _mm_sub_ps(_mm_loadu_ps(nb->py + i), vy0);
    __m128 rel = _mm_add_ps(_mm_and_ps(_mm_sub_ps(_mm_loadu_ps(nb->vx + i), vvx), abs),
                            _mm_and_ps(_mm_sub_ps(_mm_loadu_ps(nb->vy + i), vvy), abs));
    __m128 reach = _mm_add_ps(_mm_add_ps(_mm_loadu_ps(nb->r + i), vpad), _mm_mul_ps(rel, vdt));
    int hit = _mm_movemask_ps(
        _mm_cmplt_ps(_mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy)), _mm_mul_ps(reach, reach)));
    for (; hit && k < WORLD_CONTACT_MAX; hit &= hit - 1)
      list[k++] = items[pos[i + (uint32_t)__builtin_ctz((unsigned)hit)]];
  }
#endif
  for (; i < n && k < WORLD_CONTACT_MAX; i++) {
    float dx = nb->px[i] - x, dy = nb->py[i] - y;
    float reach = nb->r[i] + pad + (fabsf(nb->vx[i] - ovx) + fabsf(nb->vy[i] - ovy)) * dt;
    if (dx * dx + dy * dy < reach * reach)
      list[k++] = items[pos[i]];
  }
  w->ctc_n[d] = (uint8_t)k;
}

/* Displacement of agent d out of its candidates' bodies, from the current
 * positions; returns whether it overlaps any. */
static int contact_disp(const steer_world *w, uint32_t d, float *ox, float *oy) {
  const uint32_t *list = w->ctc + (size_t)d * WORLD_CONTACT_MAX;
  const uint32_t n = w->ctc_n[d];
  const float x = w->px[d], y = w->py[d], r = w->radius[d];
  const uint8_t prio = (uint8_t)(w->akey[d] - 1u); /* an avoider: akey is 1 + its priority */
  float sx = 0.0f, sy = 0.0f;
  uint32_t hits = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t j = list[i];
    float dx = x - w->px[j], dy = y - w->py[j];
    float R = r + w->radius[j];
    float d2 = dx * dx + dy * dy;
    if (!(d2 < R * R))
      continue;
    float dist = sqrtf(d2);
    float pen = R - dist;
    if (!(pen > CONTACT_SLOP))
      continue;
    float nx, ny;
    if (dist > 1e-6f) {
      nx = dx / dist;
      ny = dy / dist;
    } else { /* coincident: apart along x, the side by id */
      nx = w->id[d] < w->id[j] ? -1.0f : 1.0f;
      ny = 0.0f;
    }
    uint16_t key = w->akey[j];
    float part = 0.5f * steer_avoid_share(prio, key ? (uint8_t)(key - 1u) : 0u, key != 0);
    sx += nx * pen * part;
    sy += ny * pen * part;
    hits++;
  }
  *ox = sx;
  *oy = sy;
  return hits > 0;
}

/* Whether avoider d, arriving with STEER_ARRIVAL_SETTLE, not done and on its
 * last leg (a path follower heading for its last node), touches one of its
 * candidates that is done at the same goal, the two not parted by a wall. */
static int settles(const steer_world *w, uint32_t d) {
  vec2 goal, other;
  float within, unused;
  if (w->behaviour[d].arrival != STEER_ARRIVAL_SETTLE || !arrival_goal(w, d, &goal, &within) ||
      arrival_done(w, d))
    return 0;
  if (w->behaviour[d].kind == STEER_BEHAVIOUR_FOLLOW_PATH &&
      w->cursor[d].node + 1u != w->paths[w->path[d]].count)
    return 0;
  const uint32_t *list = w->ctc + (size_t)d * WORLD_CONTACT_MAX;
  for (uint32_t i = 0; i < w->ctc_n[d]; i++) {
    uint32_t j = list[i];
    float dx = w->px[d] - w->px[j], dy = w->py[d] - w->py[j];
    float reach = w->radius[d] + w->radius[j] + STEER_SETTLE_GAP;
    float t;
    vec2 n;
    if (dx * dx + dy * dy <= reach * reach && arrival_done(w, j) && arrival_goal(w, j, &other, &unused) &&
        v2_len2(v2_sub(other, goal)) <= within * within &&
        !(w->map_live && steer_map_cast(w->map, v2(w->px[d], w->py[d]), v2(-dx, -dy), 0.0f, &t, &n)))
      return 1;
  }
  return 0;
}

/* Agent d is done where it stands (world_holds): the events are the ones its
 * behaviour sends at the goal (a path's last node: WAYPOINT, then
 * PATH_FINISHED). */
static void settle(steer_world *w, uint32_t d) {
  if (w->behaviour[d].kind == STEER_BEHAVIOUR_FOLLOW_PATH) {
    steer_path_cursor *c = &w->cursor[d];
    c->finished = 1;
    c->turn_time_left = 0.0f;
    world_emit(w, w->id[d], STEER_EVENT_WAYPOINT, c->node);
    world_emit(w, w->id[d], STEER_EVENT_PATH_FINISHED, c->node);
  } else {
    w->arrived[d] = 1;
    world_emit(w, w->id[d], STEER_EVENT_ARRIVED, 0);
  }
}

void world_contact(steer_world *w, float dt) {
  if (!w->ctc || !w->avoiding)
    return;
  uint32_t *act = w->ctc_act;
  float *disp = w->ctc_disp;
  uint8_t *moved = w->ctc_moved; /* iteration + 1 of an agent's last move in this pass, else 0 */
  uint32_t m = 0;
  for (uint32_t d = 0; d < w->count; d++)
    if (w->ctc_n[d])
      act[m++] = d;
  const vec2 lo = w->cfg.min, hi = w->cfg.max;
  float *tot = disp + 2 * (size_t)m;
  memset(tot, 0, 2 * (size_t)m * sizeof(*tot));
  for (int it = 0; it < CONTACT_ITERATIONS && m > 0; it++) {
    uint32_t moving = 0;
    for (uint32_t k = 0; k < m; k++) {
      uint32_t d = act[k];
      if (it > 0 && moved[d] != it) {
        /* Its displacement was 0 in the last iteration (it did not move);
         * unless a candidate moved since, it is 0 again: skip the work. */
        const uint32_t *list = w->ctc + (size_t)d * WORLD_CONTACT_MAX;
        uint32_t n = w->ctc_n[d], i = 0;
        while (i < n && moved[list[i]] != it)
          i++;
        if (i == n) {
          disp[2 * k] = 0.0f;
          disp[2 * k + 1] = 0.0f;
          continue;
        }
      }
      if (contact_disp(w, d, &disp[2 * k], &disp[2 * k + 1]))
        moving++;
    }
    if (!moving)
      break;
    for (uint32_t k = 0; k < m; k++) {
      float ddx = disp[2 * k], ddy = disp[2 * k + 1];
      if (ddx == 0.0f && ddy == 0.0f)
        continue;
      uint32_t d = act[k];
      moved[d] = (uint8_t)(it + 1);
      vec2 p0 = v2(w->px[d], w->py[d]);
      vec2 p1 = v2(steer_clampf(p0.x + ddx, lo.x, hi.x), steer_clampf(p0.y + ddy, lo.y, hi.y));
      vec2 v = v2(w->vx[d], w->vy[d]);
      if (w->map_live && steer_map_move(w->map, p0, &p1, w->radius[d], &v, lo, hi) > 0) {
        w->vx[d] = v.x;
        w->vy[d] = v.y;
      }
      tot[2 * k] += p1.x - p0.x;
      tot[2 * k + 1] += p1.y - p0.y;
      w->px[d] = p1.x;
      w->py[d] = p1.y;
    }
  }
  /* Who settles, from who was done as the tick began (marked, then
   * applied). */
  for (uint32_t k = 0; k < m; k++)
    moved[act[k]] = settles(w, act[k]) ? SETTLE_MARK : 0;
  /* The velocity follows the position (as in position-based dynamics): what
   * the pass moved a body by is taken off its closing speed. */
  const float inv_dt = 1.0f / dt;
  for (uint32_t k = 0; k < m; k++) {
    uint32_t d = act[k];
    if (moved[d] == SETTLE_MARK)
      settle(w, d);
    w->ctc_n[d] = 0;
    moved[d] = 0;
    if (tot[2 * k] == 0.0f && tot[2 * k + 1] == 0.0f)
      continue;
    if (world_holds(w, d)) {
      /* Pushed while it holds: moved, and at rest there. Given the push as
       * a speed, a packed squad would pass it on from body to body. */
      w->vx[d] = 0.0f;
      w->vy[d] = 0.0f;
      continue;
    }
    vec2 v = v2(w->vx[d] + tot[2 * k] * inv_dt, w->vy[d] + tot[2 * k + 1] * inv_dt);
    v = v2_clip(v, w->limits[d].max_speed);
    w->vx[d] = v.x;
    w->vy[d] = v.y;
  }
}
