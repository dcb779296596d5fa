/* path.c: path following (seed 002) with arc and lazy cornering (seed 004).
 *
 * The steer_path_steer_* functions only read the cursor; steer_path_advance is
 * the one place that moves it on, after integration, so that a world can compute
 * every agent's steering from the previous tick's state. */
#include "path.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "simd.h"

/* Arc turns are skipped below this corner angle: tan(angle/2) is tiny and the
 * inscribed circle huge, so going straight is the better turn (seed 004). */
#define PATH_ARC_MIN_ANGLE (STEER_PI / 180.0f)

/* An arc assumes the agent runs along the in-leg; when its direction of travel is
 * further off than this (start of a path, pushed off by avoidance), the node is
 * reached by its radius instead. cos(30 degrees). */
#define PATH_ARC_MIN_ALIGN 0.8660254f

/* Below this the agent is taken to be at rest (m/s). */
#define PATH_EPS_SPEED 1e-4f

/* The seed's turn law omega = diff * speed has a gain of speed per metre; closer
 * than this to the node the gain grows as speed / distance (see turn_gain). */
#define PATH_GAIN_DISTANCE 1.0f

static int path_valid(const steer_path *path) {
  return path != NULL && path->points != NULL && path->count > 0;
}

/* cursor->node, clamped so that a stale cursor never reads past the points. */
static uint32_t cursor_node(const steer_path *path, const steer_path_cursor *c) {
  return c->node < path->count ? c->node : path->count - 1u;
}

/* Ping-pong honours the cursor's direction; once and loop always run forward. */
static int cursor_dir(const steer_path *path, const steer_path_cursor *c) {
  return path->mode == STEER_PATH_PINGPONG && c->dir < 0 ? -1 : 1;
}

/* Whether the agent must stop at node: the last leg of a once path, and a
 * one-point path in any mode (there is nowhere else to go). */
static int is_final_leg(const steer_path *path, uint32_t node) {
  return path->count == 1u || (path->mode == STEER_PATH_ONCE && node == path->count - 1u);
}

/* The node after node in the direction of travel without turning back: loop
 * wraps; once stops at its end; a ping-pong end is a reversal, not a corner.
 * Returns 0 when there is none. */
static int following_node(const steer_path *path, uint32_t node, int dir, uint32_t *out) {
  uint32_t last = path->count - 1u;
  if (path->count < 2u)
    return 0;
  if (path->mode == STEER_PATH_LOOP) {
    *out = node == last ? 0u : node + 1u;
    return 1;
  }
  if (dir < 0) {
    if (node == 0u)
      return 0;
    *out = node - 1u;
    return 1;
  }
  if (node == last)
    return 0;
  *out = node + 1u;
  return 1;
}

/* A copy of the params whose arrive radius lies well inside the node radius, so
 * that an agent arriving at the last node comes to rest where it counts as
 * reached (a node radius smaller than target_radius would leave it short). */
static steer_params arrive_params(const steer_params *p, const steer_path *path) {
  steer_params q = *p;
  float r = 0.5f * path->radius;
  if (r > 0.0f && r < q.target_radius)
    q.target_radius = r;
  return q;
}

/* Gain of the heading laws: the seed's speed (per metre), raised to speed / d
 * within PATH_GAIN_DISTANCE of the node. With omega = k * bearing, the bearing to
 * the node shrinks only while k > speed / d; the seed's gain alone orbits a node
 * at 2/pi m whenever the node radius is smaller than that. */
static float turn_gain(float speed, float dist) {
  return dist < PATH_GAIN_DISTANCE && dist > 0.0f ? speed * (PATH_GAIN_DISTANCE / dist) : speed;
}

/* Caps the speed so that the node stays outside the circle the agent turns on at
 * max_rotation: a point at distance d and bearing a lies inside it when
 * d < 2 * (speed / max_rotation) * |sin a|, and the agent would circle it for ever. */
static float reachable_speed(const steer_state *s, const steer_limits *l, vec2 to_node, float dist,
                             float speed) {
  if (dist <= 0.0f)
    return speed;
  float sin_bearing = fabsf(v2_cross(steer_heading(s->orientation), to_node)) / dist;
  if (sin_bearing <= 0.0f)
    return speed;
  float cap = l->max_rotation * dist / (2.0f * sin_bearing);
  return cap < speed ? cap : speed;
}

/* Lazy cornering (seed 004 s2): head for the node, pulled back onto the leg
 * prev -> node by the lateral offset times path_recover_strength. */
static float lazy_rotation(const steer_state *s, const steer_limits *l, const steer_params *p, vec2 prev,
                           vec2 node, float gain) {
  vec2 to_node = v2_sub(node, s->position);
  vec2 lateral = v2(0.0f, 0.0f);
  vec2 leg_dir = v2_norm(v2_sub(node, prev));
  if (v2_len2(leg_dir) > 0.0f) {
    vec2 from_node = v2_sub(s->position, node);
    vec2 along = v2_scale(leg_dir, v2_dot(leg_dir, from_node));
    lateral = v2_sub(along, from_node); /* perpendicular, from the agent to the leg */
  }
  vec2 desired = v2_add(to_node, v2_scale(lateral, p->path_recover_strength));
  if (v2_len2(desired) == 0.0f)
    return 0.0f;
  float diff = steer_wrap_angle(steer_orientation_of(desired) - s->orientation);
  return steer_clampf(diff * gain, -l->max_rotation, l->max_rotation);
}

/* Ends a finished arc turn, and shapes the last tick of a running one: when less
 * than a tick is left, the rate is scaled so that the next tick turns exactly the
 * rest of the angle (ticks are assumed to be of equal length dt). */
static void settle_turn(steer_path_cursor *c, float dt) {
  if (!(c->turn_time_left > 0.0f)) {
    c->turn_time_left = 0.0f;
    c->turn_rate = 0.0f;
    return;
  }
  if (dt > 0.0f && c->turn_time_left < dt) {
    c->turn_rate *= c->turn_time_left / dt;
    c->turn_time_left = dt;
  }
}

/* Seed 004 s1: when the agent is within the trigger distance of a corner, turn
 * along the circle inscribed in the two legs. Returns 1 (node reached, turn set
 * up in c) or 0 (not a trigger: node radius rules). */
static int try_arc(const steer_path *path, steer_path_cursor *c, const steer_state *s, const steer_limits *l,
                   const steer_params *p, uint32_t node, float dist, float dt) {
  uint32_t next;
  uint32_t prev = steer_path_prev_node(path, c);
  if (prev == node || !following_node(path, node, cursor_dir(path, c), &next))
    return 0;
  vec2 corner = path->points[node];
  vec2 in = v2_sub(corner, path->points[prev]);
  vec2 out = v2_sub(path->points[next], corner);
  float in_len = v2_len(in);
  float out_len = v2_len(out);
  float limit = fminf(p->turn_trigger_distance, 0.5f * fminf(in_len, out_len));
  if (!(limit > 0.0f) || dist > limit)
    return 0;
  float speed = v2_len(s->velocity);
  if (speed < PATH_EPS_SPEED || v2_dot(s->velocity, in) < PATH_ARC_MIN_ALIGN * speed * in_len)
    return 0;

  float angle = atan2f(v2_cross(in, out), v2_dot(in, out)); /* in-leg to out-leg, CCW positive */
  float size = fabsf(angle);
  c->turn_time_left = 0.0f;
  c->turn_rate = 0.0f;
  if (size < PATH_ARC_MIN_ANGLE)
    return 1; /* nearly straight: reached, no turn */
  float radius = dist / tanf(0.5f * size);
  /* omega = speed / R, i.e. angle / (arc_length / speed). A circle tighter than
   * max_rotation allows is run at max_rotation for the whole angle instead: the
   * agent leaves it wide but on the out-leg's heading. */
  float rate = speed >= radius * l->max_rotation ? l->max_rotation : speed / radius;
  c->turn_time_left = size / rate;
  c->turn_rate = angle < 0.0f ? -rate : rate;
  settle_turn(c, dt);
  return 1;
}

void steer_path_cursor_init(steer_path_cursor *c) {
  c->node = 0u;
  c->dir = 1;
  c->finished = 0u;
  c->turn_time_left = 0.0f;
  c->turn_rate = 0.0f;
}

uint32_t steer_path_prev_node(const steer_path *path, const steer_path_cursor *c) {
  if (!path_valid(path))
    return 0u;
  uint32_t node = cursor_node(path, c);
  uint32_t last = path->count - 1u;
  if (path->count == 1u)
    return node;
  switch (path->mode) {
  case STEER_PATH_LOOP:
    /* Node 0 of a loop is entered from the last node (the closing leg). */
    return node == 0u ? last : node - 1u;
  case STEER_PATH_PINGPONG:
    if (c->dir < 0)
      return node == last ? node : node + 1u;
    return node == 0u ? node : node - 1u;
  default:
    return node == 0u ? node : node - 1u;
  }
}

int steer_path_final_node(const steer_path *path, const steer_path_cursor *c, uint32_t *node) {
  if (!path_valid(path) || c->finished || path->mode != STEER_PATH_ONCE)
    return 0;
  *node = cursor_node(path, c);
  return is_final_leg(path, *node);
}

steer_output steer_path_steer_dynamic(const steer_state *s, const steer_limits *l, const steer_params *p,
                                      const steer_path *path, const steer_path_cursor *c) {
  if (!path_valid(path))
    return steer_brake(s, l, p);
  uint32_t node = cursor_node(path, c);
  vec2 target = path->points[node];
  if (c->finished || is_final_leg(path, node)) {
    /* Arrive also holds a finished agent at rest on the last node. */
    steer_params q = arrive_params(p, path);
    return steer_arrive(s, l, &q, target);
  }
  return steer_seek(s, l, p, target);
}

steer_kinematic_output steer_path_steer_kinematic(const steer_state *s, const steer_limits *l,
                                                  const steer_params *p, const steer_path *path,
                                                  const steer_path_cursor *c) {
  steer_kinematic_output o;
  o.velocity = v2(0.0f, 0.0f);
  o.rotation = 0.0f;
  if (!path_valid(path) || c->finished)
    return o;
  uint32_t node = cursor_node(path, c);
  vec2 target = path->points[node];
  if (is_final_leg(path, node)) {
    steer_params q = arrive_params(p, path);
    return steer_kinematic_arrive(s, l, &q, target);
  }
  return steer_kinematic_seek(s, l, target);
}

steer_heading_output steer_path_steer_heading(const steer_state *s, const steer_limits *l,
                                              const steer_params *p, const steer_path *path,
                                              const steer_path_cursor *c) {
  steer_heading_output o;
  o.rotation = 0.0f;
  o.speed = 0.0f;
  if (!path_valid(path) || c->finished)
    return o;
  float speed_now = v2_len(s->velocity);
  if (c->turn_time_left > 0.0f) {
    /* Committed to an arc: hold the speed the circle was computed for. */
    o.rotation = c->turn_rate;
    o.speed = fminf(speed_now, l->max_speed);
    return o;
  }

  uint32_t node = cursor_node(path, c);
  vec2 target = path->points[node];
  vec2 to_node = v2_sub(target, s->position);
  float dist = v2_len(to_node);
  float speed = l->max_speed;
  if (is_final_leg(path, node)) {
    /* Braking curve to rest half a node radius short of the node: the node is
     * reached (and the speed set to 0) with speed to spare for the last stretch. */
    float room = fmaxf(dist - 0.5f * path->radius, 0.0f);
    speed = fminf(speed, sqrtf(2.0f * l->max_acceleration * room));
  }
  speed = reachable_speed(s, l, to_node, dist, speed);
  o.speed = speed;

  /* The gain follows the faster of the actual and the wanted speed: an agent at
   * rest still turns toward its node, a braking one still steers. */
  float gain = turn_gain(fmaxf(speed, speed_now), dist);
  if (path->cornering == STEER_CORNER_LAZY) {
    vec2 prev = path->points[steer_path_prev_node(path, c)];
    o.rotation = lazy_rotation(s, l, p, prev, target, gain);
  } else {
    /* NONE, and ARC between corners: converge on the node (seed 004). */
    o.rotation = steer_heading_turn_toward(s, l, gain, target);
  }
  return o;
}

unsigned steer_path_advance(const steer_path *path, steer_path_cursor *c, const steer_state *s,
                            const steer_limits *l, const steer_params *p, float dt, uint32_t *reached) {
  if (!path_valid(path) || c->finished)
    return 0u;
  if (c->turn_time_left > 0.0f) {
    /* A running turn is committed; nodes are looked at again when it ends. */
    if (dt > 0.0f)
      c->turn_time_left -= dt;
    settle_turn(c, dt);
    if (c->turn_time_left > 0.0f)
      return 0u;
  }

  uint32_t node = cursor_node(path, c);
  float dist = v2_len(v2_sub(s->position, path->points[node]));
  /* try_arc's trigger distance is at most turn_trigger_distance: beyond it
   * (the common case) its leg lengths need not be computed. */
  int hit = path->cornering == STEER_CORNER_ARC && !(dist > p->turn_trigger_distance) &&
            try_arc(path, c, s, l, p, node, dist, dt);
  if (!hit && !(dist <= path->radius))
    return 0u;

  unsigned events = STEER_PATH_EVENT_WAYPOINT;
  if (reached != NULL)
    *reached = node;
  uint32_t last = path->count - 1u;
  if (path->count == 1u) {
    /* Nowhere to go: stay on the point, reporting it once. */
    c->finished = 1u;
    return path->mode == STEER_PATH_ONCE ? events | STEER_PATH_EVENT_FINISHED : events;
  }
  switch (path->mode) {
  case STEER_PATH_LOOP:
    c->dir = 1;
    c->node = node == last ? 0u : node + 1u;
    break;
  case STEER_PATH_PINGPONG: {
    /* Seed 002, fixed: currentNode += pathDir, and at either end turn around. */
    int dir = c->dir < 0 ? -1 : 1;
    if ((dir > 0 && node == last) || (dir < 0 && node == 0u)) {
      dir = -dir;
      events |= STEER_PATH_EVENT_REVERSED;
    }
    c->dir = (int8_t)dir;
    c->node = dir > 0 ? node + 1u : node - 1u;
    break;
  }
  default:
    c->dir = 1;
    if (node == last) {
      c->node = last;
      c->finished = 1u;
      events |= STEER_PATH_EVENT_FINISHED;
    } else {
      c->node = node + 1u;
    }
    break;
  }
  return events;
}

#if STEER_SIMD
#define BL_W 4
#include "simdw.h" /* vpath_heading_4 */

/* The lanes' ends (f4_finish_lanes) of steer_path_steer_heading_x4. */
typedef struct heading_lanes {
  const steer_state *const *s;
  const steer_limits *const *l;
  const steer_params *const *p;
  const steer_path *const *path;
  const steer_path_cursor *const *c;
  steer_heading_output *out;
} heading_lanes;

static inline void heading_keep(void *ctx, int i, const float (*r)[4]) {
  heading_lanes *h = ctx;
  h->out[i].rotation = r[0][i];
  h->out[i].speed = r[1][i];
}

static inline void heading_redo(void *ctx, int i) {
  heading_lanes *h = ctx;
  h->out[i] = steer_path_steer_heading(h->s[i], h->l[i], h->p[i], h->path[i], h->c[i]);
}
#endif

int steer_path_steer_heading_x4(const steer_state *const s[4], const steer_limits *const l[4],
                                const steer_params *const p[4], const steer_path *const path[4],
                                const steer_path_cursor *const c[4], steer_heading_output out[4]) {
#if STEER_SIMD
  /* Per lane, what steer_path_steer_heading reads of the path and cursor. */
  float tx[4], ty[4], hr[4], fin[4], turn[4], rate[4];
  int scalar = 0;
  for (int i = 0; i < 4; i++) {
    const steer_path *pa = path[i];
    const steer_path_cursor *ci = c[i];
    tx[i] = ty[i] = hr[i] = rate[i] = 0.0f;
    fin[i] = turn[i] = 0.0f;
    if (!path_valid(pa) || ci->finished || pa->cornering == STEER_CORNER_LAZY) {
      scalar |= 1 << i; /* stopped, or the lazy law: the scalar function */
      continue;
    }
    uint32_t node = cursor_node(pa, ci);
    tx[i] = pa->points[node].x;
    ty[i] = pa->points[node].y;
    hr[i] = 0.5f * pa->radius;
    uint32_t ones = UINT32_MAX;
    if (is_final_leg(pa, node))
      memcpy(&fin[i], &ones, sizeof ones);
    if (ci->turn_time_left > 0.0f)
      memcpy(&turn[i], &ones, sizeof ones);
    rate[i] = ci->turn_rate;
  }
#define LANES(e) _mm_setr_ps(e(0), e(1), e(2), e(3))
#define PX(i)    s[i]->position.x
#define PY(i)    s[i]->position.y
#define VX(i)    s[i]->velocity.x
#define VY(i)    s[i]->velocity.y
#define TH(i)    s[i]->orientation
#define MS(i)    l[i]->max_speed
#define MA(i)    l[i]->max_acceleration
#define MR(i)    l[i]->max_rotation
  f4 bad = _mm_setzero_ps(), out_rot, out_speed, speed_now;
  vpath_heading_4(LANES(PX), LANES(PY), LANES(VX), LANES(VY), LANES(TH), LANES(MS), LANES(MA), LANES(MR),
                  _mm_loadu_ps(tx), _mm_loadu_ps(ty), _mm_loadu_ps(hr), _mm_loadu_ps(fin), _mm_loadu_ps(turn),
                  _mm_loadu_ps(rate), &out_rot, &out_speed, &speed_now, &bad);
  (void)speed_now;
  const f4 res[] = {out_rot, out_speed};
  heading_lanes lanes = {s, l, p, path, c, out};
  return f4_finish_lanes(res, 2, bad, scalar, heading_keep, heading_redo, &lanes);
#undef LANES
#undef PX
#undef PY
#undef VX
#undef VY
#undef TH
#undef MS
#undef MA
#undef MR
#else
  for (int i = 0; i < 4; i++)
    out[i] = steer_path_steer_heading(s[i], l[i], p[i], path[i], c[i]);
  return 0;
#endif
}
