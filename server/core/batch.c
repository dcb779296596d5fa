/* batch.c: the vector path's lean batches (world_internal.h).
 *
 * A lean agent is one of the batch kinds (arrive + look where going, wander,
 * heading path follower) with no neighbours and no stuck detection: in a
 * world without a map its whole step (steering, integration, the world's
 * edge, the events precheck) is arithmetic on its own state and its cached
 * record (w->brec), so eight (AVX) or four (SSE2) such agents are stepped as
 * the lanes of one vector, straight from the world's arrays. The kernels are
 * written once (batch_lanes.h) and compiled for both widths; every lane does
 * the scalar code's operations in its order, so the results are the scalar
 * path's to the bit (tests/test_pool.c, tests/test_batch.c). */
#include <float.h>
#include <string.h>

#include "simd.h"
#include "world_internal.h"

#if STEER_SIMD && defined(__GNUC__) && !defined(__AVX__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define BATCH_AVX 1 /* an AVX variant chosen at run time */
#elif STEER_SIMD && defined(__AVX__)
#include <immintrin.h>
#define BATCH_AVX 1 /* built for AVX (-march=native): always there */
#else
#define BATCH_AVX 0
#endif

void world_batch_refresh(steer_world *w, uint32_t d) {
  const steer_behaviour *b = &w->behaviour[d];
  const steer_limits *l = &w->limits[d];
  const steer_params *p = &b->params;
  world_batch_rec *r = &w->brec[d];
  int kind = BATCH_NONE;
  if (w->model[d] == STEER_MODEL_DYNAMIC) {
    /* Only an arrival at the point: one that settles or passes holds where
     * it is once done (world_holds), and a passing one seeks until then, as
     * the scalar path does. */
    if (b->kind == STEER_BEHAVIOUR_ARRIVE)
      kind = b->target.kind == STEER_TARGET_POINT && b->facing != STEER_FACING_TARGET &&
                     b->facing != STEER_FACING_NONE && b->arrival == STEER_ARRIVAL_POINT
                 ? BATCH_ARRIVE_LOOK
                 : BATCH_NONE;
    else if (b->kind == STEER_BEHAVIOUR_WANDER)
      kind = BATCH_WANDER;
  } else if (w->model[d] == STEER_MODEL_HEADING && b->kind == STEER_BEHAVIOUR_FOLLOW_PATH) {
    kind = BATCH_PATH_HEADING;
  }
  memset(r, 0, sizeof(*r));
  r->max_speed = l->max_speed;
  r->max_acceleration = l->max_acceleration;
  r->max_rotation = l->max_rotation;
  r->max_angular_acceleration = l->max_angular_acceleration;
  switch (kind) {
  case BATCH_ARRIVE_LOOK:
    r->k[0] = p->time_to_target;
    r->k[1] = p->target_radius;
    r->k[2] = p->slow_radius;
    r->k[3] = p->align_target_radius;
    r->k[4] = p->align_slow_radius;
    r->k[5] = p->align_time_to_target;
    r->k[6] = b->target.point.x;
    r->k[7] = b->target.point.y;
    break;
  case BATCH_WANDER:
    r->k[0] = p->wander_rate;
    r->k[1] = p->wander_offset;
    r->k[2] = p->wander_radius;
    r->k[3] = p->align_target_radius;
    r->k[4] = p->align_slow_radius;
    r->k[5] = p->align_time_to_target;
    break;
  case BATCH_PATH_HEADING:
    r->k[0] = p->turn_trigger_distance;
    break;
  default:
    break;
  }
  uint8_t flags = 0;
  if (needs_neighbours(b))
    flags |= BATCH_NEIGHBOURS;
  if (b->stuck_time > 0.0f)
    flags |= BATCH_STUCK;
  w->bkind[d] = (uint8_t)(kind | flags);
}

#if STEER_SIMD
#define BL_W 4
#include "batch_lanes.h"
#undef BL_W
#endif

#if BATCH_AVX
#define BL_W 8
#include "batch_lanes.h"
#undef BL_W
#endif

/* -1: not decided yet. Relaxed atomics: threads deciding at once all store
 * the same value. */
static int use_avx = -1;

int world_batch_avx_supported(void) {
#if BATCH_AVX && defined(__AVX__)
  return 1;
#elif BATCH_AVX
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") ? 1 : 0;
#else
  return 0;
#endif
}

static int batch_avx(void) {
  int on = __atomic_load_n(&use_avx, __ATOMIC_RELAXED);
  if (on < 0) {
    on = world_batch_avx_supported();
    __atomic_store_n(&use_avx, on, __ATOMIC_RELAXED);
  }
  return on;
}

int world_batch_set_avx(int on) {
  int was = batch_avx();
  __atomic_store_n(&use_avx, on ? world_batch_avx_supported() : 0, __ATOMIC_RELAXED);
  return was;
}

uint32_t world_batch_width(void) { return batch_avx() ? 8u : 4u; }

unsigned world_batch_lean(steer_world *w, float dt, int kind, const uint32_t *dd, uint32_t n) {
#if STEER_SIMD
  uint32_t lanes[8];
  const uint32_t width = world_batch_width();
  if (n == 0 || n > width)
    return 0;
  /* Short batches repeat their last agent in the spare lanes, which are
   * computed and dropped. */
  for (uint32_t i = 0; i < width; i++)
    lanes[i] = dd[i < n ? i : n - 1u];
  unsigned want = (1u << n) - 1u;
#if BATCH_AVX
  if (width == 8u) {
    switch (kind) {
    case BATCH_ARRIVE_LOOK:
      return lean_arrive_8(w, dt, lanes, want);
    case BATCH_WANDER:
      return lean_wander_8(w, dt, lanes, want);
    case BATCH_PATH_HEADING:
      return lean_path_8(w, dt, lanes, want);
    default:
      return 0;
    }
  }
#endif
  switch (kind) {
  case BATCH_ARRIVE_LOOK:
    return lean_arrive_4(w, dt, lanes, want);
  case BATCH_WANDER:
    return lean_wander_4(w, dt, lanes, want);
  case BATCH_PATH_HEADING:
    return lean_path_4(w, dt, lanes, want);
  default:
    return 0;
  }
#else
  (void)w;
  (void)dt;
  (void)kind;
  (void)dd;
  (void)n;
  return 0;
#endif
}

unsigned world_batch_finish_dynamic(steer_world *w, float dt, int kind, const uint32_t dd[4],
                                    const steer_output o[4]) {
#if STEER_SIMD
  return finish_dynamic_4(w, dt, kind, dd, o);
#else
  (void)w;
  (void)dt;
  (void)kind;
  (void)dd;
  (void)o;
  return 0;
#endif
}
