/* steering.c: the behaviours and integrators of steering.h.
 *
 * Pure functions of their arguments: no allocation, no I/O, no hidden state; the
 * only randomness comes from the steer_rng the caller passes. The dynamic
 * behaviours follow seed 000 (Millington) and seed 001 (Buckland) with the fixes
 * docs/behaviours.md describes; see approach_speed() for how arrive and align
 * avoid overshoot. */
#include "steering.h"

#include <float.h>
#include <stddef.h>

#include "simd.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#define STEERING_SIMD 1
#else
#define STEERING_SIMD 0
#endif

steer_params steer_default_params(void) {
  steer_params p;
  p.time_to_target = 0.1f;
  p.target_radius = 0.5f;
  p.slow_radius = 0.0f;
  p.kinematic_time_to_target = 0.25f;
  p.align_target_radius = 0.02f;
  p.align_slow_radius = 0.6f;
  p.align_time_to_target = 0.1f;
  p.max_prediction = 2.0f;
  p.panic_radius = 0.0f;
  p.wander_offset = 4.0f;
  p.wander_radius = 2.0f;
  p.wander_rate = 4.0f;
  p.separation_radius = 2.0f;
  p.turn_trigger_distance = 5.0f;
  p.path_recover_strength = 1.0f;
  return p;
}

steer_limits steer_default_limits(void) {
  steer_limits l;
  l.max_speed = 3.0f;
  l.max_acceleration = 6.0f;
  l.max_rotation = 4.0f;
  l.max_angular_acceleration = 16.0f;
  l.radius = 0.5f;
  return l;
}

static steer_output output_zero(void) {
  steer_output o;
  o.linear = v2(0.0f, 0.0f);
  o.angular = 0.0f;
  return o;
}

static float clip_abs(float v, float max_abs) { return steer_clampf(v, -max_abs, max_abs); }

/* Speed (or turn rate) to ask for at distance dist (or angle) from the goal.
 *
 * With slow_radius > 0, Millington's ramp (max * dist / slow_radius) capped by the
 * braking curve sqrt(max_acc * dist): the speed from which braking at half the
 * limit stops exactly at the goal, the other half being headroom for the lag of
 * the (target - current) / time_to_target controller, which always runs a little
 * above the speed it tracks. The ramp alone overshoots when slow_radius is small
 * for the acceleration available.
 *
 * With slow_radius 0 the braking comes from the acceleration alone: the agent
 * keeps max_speed until v^2 / (2 k max_acc) from the goal and brakes at k of the
 * limit (ARRIVE_BRAKE_SHARE), along sqrt(c^2 + 2 k max_acc dist) - c with
 * c = k max_acc time_to_target. The controller runs c above the speed it tracks,
 * so the agent itself moves at sqrt(c^2 + 2 k max_acc dist) and sheds exactly
 * k max_acc: the curve is the one whose lagging follower brakes on the limit.
 *
 * Both are capped by dist / (4 * time_to_target): near the goal the controller
 * then behaves as a critically damped spring, which reaches the goal without
 * crossing it (its discrete form with dt <= time_to_target has real positive
 * eigenvalues). Safe for any slow_radius as long as the tick dt <= time_to_target. */
#define ARRIVE_BRAKE_SHARE 0.9f

static float approach_speed(float dist, float max_speed, float max_acc, float slow_radius,
                            float time_to_target) {
  float speed = max_speed;
  float braking;
  if (slow_radius > 0.0f) {
    if (dist < slow_radius)
      speed = max_speed * dist / slow_radius;
    braking = sqrtf(max_acc * dist);
  } else {
    float acc = ARRIVE_BRAKE_SHARE * max_acc;
    float lag = acc * time_to_target;
    braking = sqrtf(lag * lag + 2.0f * acc * dist) - lag;
  }
  if (braking < speed)
    speed = braking;
  float damped = dist / (4.0f * time_to_target);
  if (damped < speed)
    speed = damped;
  return speed;
}

static vec2 seek_linear(const steer_state *s, const steer_limits *l, const steer_params *p,
                        vec2 desired_velocity) {
  vec2 linear = v2_scale(v2_sub(desired_velocity, s->velocity), 1.0f / p->time_to_target);
  return v2_clip(linear, l->max_acceleration);
}

/* Flee without the panic radius check; a coincident target is fled along the
 * agent's heading, so the agent always has somewhere to go. */
static steer_output flee_from(const steer_state *s, const steer_limits *l, const steer_params *p,
                              vec2 target) {
  vec2 away = v2_sub(s->position, target);
  vec2 dir = v2_len2(away) > 0.0f ? v2_norm(away) : steer_heading(s->orientation);
  steer_output o = output_zero();
  o.linear = seek_linear(s, l, p, v2_scale(dir, l->max_speed));
  return o;
}

/* Velocity toward a point at the speed approach_speed() allows; zero at the point. */
static vec2 approach_velocity(const steer_state *s, const steer_limits *l, const steer_params *p,
                              vec2 target) {
  vec2 offset = v2_sub(target, s->position);
  float dist = v2_len(offset);
  if (!(dist > 0.0f))
    return v2(0.0f, 0.0f);
  float speed = approach_speed(dist, l->max_speed, l->max_acceleration, p->slow_radius, p->time_to_target);
  return v2_scale(offset, speed / dist);
}

/* Angular acceleration that stops the rotation. */
static float brake_rotation(const steer_state *s, const steer_limits *l, const steer_params *p) {
  return clip_abs(-s->rotation / p->align_time_to_target, l->max_angular_acceleration);
}

steer_kinematic_output steer_kinematic_seek(const steer_state *s, const steer_limits *l, vec2 target) {
  steer_kinematic_output o;
  o.velocity = v2_scale(v2_norm(v2_sub(target, s->position)), l->max_speed);
  o.rotation = 0.0f;
  return o;
}

steer_kinematic_output steer_kinematic_flee(const steer_state *s, const steer_limits *l, vec2 target) {
  steer_kinematic_output o;
  o.velocity = v2_scale(v2_norm(v2_sub(s->position, target)), l->max_speed);
  o.rotation = 0.0f;
  return o;
}

steer_kinematic_output steer_kinematic_arrive(const steer_state *s, const steer_limits *l,
                                              const steer_params *p, vec2 target) {
  steer_kinematic_output o;
  vec2 offset = v2_sub(target, s->position);
  o.rotation = 0.0f;
  o.velocity = v2(0.0f, 0.0f);
  if (v2_len(offset) < p->target_radius)
    return o;
  /* With dt <= kinematic_time_to_target one step covers at most the distance left,
   * so the agent never passes the target. */
  o.velocity = v2_clip(v2_scale(offset, 1.0f / p->kinematic_time_to_target), l->max_speed);
  return o;
}

steer_kinematic_output steer_kinematic_wander(const steer_state *s, const steer_limits *l, steer_rng *rng) {
  steer_kinematic_output o;
  o.velocity = v2_scale(steer_heading(s->orientation), l->max_speed);
  o.rotation = steer_rng_binomial(rng) * l->max_rotation;
  return o;
}

steer_output steer_seek(const steer_state *s, const steer_limits *l, const steer_params *p, vec2 target) {
  steer_output o = output_zero();
  vec2 dir = v2_norm(v2_sub(target, s->position));
  o.linear = seek_linear(s, l, p, v2_scale(dir, l->max_speed));
  return o;
}

steer_output steer_flee(const steer_state *s, const steer_limits *l, const steer_params *p, vec2 target) {
  if (p->panic_radius > 0.0f && v2_len2(v2_sub(s->position, target)) > p->panic_radius * p->panic_radius)
    return output_zero();
  return flee_from(s, l, p, target);
}

steer_output steer_arrive(const steer_state *s, const steer_limits *l, const steer_params *p, vec2 target) {
  steer_output o = output_zero();
  vec2 desired = v2(0.0f, 0.0f);
  /* Inside target_radius the desired velocity is zero: a brake, so the agent
   * comes to rest inside the radius instead of coasting (seed 000 stops steering). */
  if (v2_len2(v2_sub(target, s->position)) >= p->target_radius * p->target_radius)
    desired = approach_velocity(s, l, p, target);
  o.linear = seek_linear(s, l, p, v2_clip(desired, l->max_speed));
  return o;
}

steer_output steer_align(const steer_state *s, const steer_limits *l, const steer_params *p,
                         float target_orientation) {
  steer_output o = output_zero();
  /* Wrapped, so a turn across +-pi takes the short way. */
  float error = steer_wrap_angle(target_orientation - s->orientation);
  float size = fabsf(error);
  if (size < p->align_target_radius) {
    /* Dead band: stop turning rather than chase a tiny error back and forth. */
    o.angular = brake_rotation(s, l, p);
    return o;
  }
  float rate = approach_speed(size, l->max_rotation, l->max_angular_acceleration, p->align_slow_radius,
                              p->align_time_to_target);
  if (error < 0.0f)
    rate = -rate;
  o.angular = clip_abs((rate - s->rotation) / p->align_time_to_target, l->max_angular_acceleration);
  return o;
}

steer_output steer_velocity_match(const steer_state *s, const steer_limits *l, const steer_params *p,
                                  vec2 target_velocity) {
  steer_output o = output_zero();
  o.linear = seek_linear(s, l, p, v2_clip(target_velocity, l->max_speed));
  return o;
}

steer_output steer_face(const steer_state *s, const steer_limits *l, const steer_params *p, vec2 target) {
  vec2 dir = v2_sub(target, s->position);
  if (v2_len2(dir) == 0.0f) {
    /* No direction to face (seed 000 returns its target here, a bug). */
    steer_output o = output_zero();
    o.angular = brake_rotation(s, l, p);
    return o;
  }
  return steer_align(s, l, p, steer_orientation_of(dir));
}

steer_output steer_look_where_going(const steer_state *s, const steer_limits *l, const steer_params *p) {
  if (v2_len2(s->velocity) == 0.0f) {
    steer_output o = output_zero();
    o.angular = brake_rotation(s, l, p);
    return o;
  }
  return steer_align(s, l, p, steer_orientation_of(s->velocity));
}

/* Buckland's look-ahead: the time to close the distance if both ran at full speed
 * toward each other, capped by Millington's max_prediction (0 predicts nothing). */
static float look_ahead(const steer_limits *l, const steer_params *p, const steer_state *other, float dist) {
  float t = dist / (l->max_speed + v2_len(other->velocity));
  float cap = p->max_prediction > 0.0f ? p->max_prediction : 0.0f;
  return t < cap ? t : cap;
}

steer_output steer_pursue(const steer_state *s, const steer_limits *l, const steer_params *p,
                          const steer_state *target) {
  vec2 to_target = v2_sub(target->position, s->position);
  vec2 heading = steer_heading(s->orientation);
  /* Head on (seed 001): the target comes to us, so aim at where it is. */
  if (v2_dot(to_target, heading) > 0.0f && v2_dot(heading, steer_heading(target->orientation)) < -0.95f)
    return steer_seek(s, l, p, target->position);
  float t = look_ahead(l, p, target, v2_len(to_target));
  return steer_seek(s, l, p, v2_add(target->position, v2_scale(target->velocity, t)));
}

steer_output steer_evade(const steer_state *s, const steer_limits *l, const steer_params *p,
                         const steer_state *pursuer) {
  vec2 to_pursuer = v2_sub(pursuer->position, s->position);
  float dist = v2_len(to_pursuer);
  if (p->panic_radius > 0.0f && dist > p->panic_radius)
    return output_zero();
  float t = look_ahead(l, p, pursuer, dist);
  return flee_from(s, l, p, v2_add(pursuer->position, v2_scale(pursuer->velocity, t)));
}

steer_output steer_interpose(const steer_state *s, const steer_limits *l, const steer_params *p,
                             const steer_state *a, const steer_state *b) {
  vec2 mid = v2_scale(v2_add(a->position, b->position), 0.5f);
  float t = v2_len(v2_sub(s->position, mid)) / l->max_speed;
  vec2 pa = v2_add(a->position, v2_scale(a->velocity, t));
  vec2 pb = v2_add(b->position, v2_scale(b->velocity, t));
  /* Arrive in the frame of the moving midpoint: its velocity is fed forward, or
   * the agent would trail a moving pair by the distance at which arrive's speed
   * matches theirs. Within target_radius of the midpoint it just keeps pace; the
   * predicted point (which leads the midpoint) is only approached from outside,
   * without a dead band of its own, so the agent cannot park ahead of the pair. */
  vec2 desired = v2_scale(v2_add(a->velocity, b->velocity), 0.5f);
  if (v2_len2(v2_sub(mid, s->position)) >= p->target_radius * p->target_radius)
    desired = v2_add(desired, approach_velocity(s, l, p, v2_scale(v2_add(pa, pb), 0.5f)));
  steer_output o = output_zero();
  o.linear = seek_linear(s, l, p, v2_clip(desired, l->max_speed));
  return o;
}

steer_output steer_wander(const steer_state *s, const steer_limits *l, const steer_params *p,
                          float *wander_orientation, steer_rng *rng, float dt) {
  *wander_orientation = steer_wrap_angle(*wander_orientation + steer_rng_binomial(rng) * p->wander_rate * dt);
  vec2 heading = steer_heading(s->orientation);
  vec2 centre = v2_add(s->position, v2_scale(heading, p->wander_offset));
  vec2 target =
      v2_add(centre, v2_scale(steer_heading(s->orientation + *wander_orientation), p->wander_radius));
  steer_output o = steer_face(s, l, p, target);
  o.linear = v2_scale(heading, l->max_acceleration);
  return o;
}

/* One neighbour's push, or nothing (returns 0) when it is out of reach. */
static int separation_push(const steer_state *s, const steer_limits *l, const steer_params *p, vec2 neighbour,
                           float r, vec2 *push) {
  float reach = p->separation_radius + l->radius + r;
  vec2 away = v2_sub(s->position, neighbour);
  float d2 = v2_len2(away);
  if (!(reach > 0.0f) || d2 >= reach * reach)
    return 0;
  float d = sqrtf(d2);
  /* A coincident neighbour gives no direction: back off along -heading, which
   * is deterministic (two identical agents need the caller to break the tie). */
  vec2 dir = d > 0.0f ? v2_scale(away, 1.0f / d) : v2_scale(steer_heading(s->orientation), -1.0f);
  *push = v2_scale(dir, l->max_acceleration * (reach - d) / reach);
  return 1;
}

steer_output steer_separation(const steer_state *s, const steer_limits *l, const steer_params *p,
                              const vec2 *neighbours, const float *neighbour_radius, int count) {
  steer_output o = output_zero();
  if (neighbours == NULL)
    return o;
  int i = 0;
#if STEERING_SIMD
  /* Four neighbours at a time: SSE's sqrt and division round exactly as the
   * scalar ones, each lane does the scalar operations in the same order, and
   * the pushes are summed one by one in neighbour order, so the result is the
   * scalar loop's to the bit. Coincident neighbours take the scalar path. */
  const __m128 base = _mm_set1_ps(p->separation_radius + l->radius), own = _mm_set1_ps(l->radius);
  const __m128 sx = _mm_set1_ps(s->position.x), sy = _mm_set1_ps(s->position.y);
  const __m128 acc = _mm_set1_ps(l->max_acceleration), zero = _mm_setzero_ps(), one = _mm_set1_ps(1.0f);
  for (; i + 4 <= count; i += 4) {
    __m128 a = _mm_loadu_ps(&neighbours[i].x), b = _mm_loadu_ps(&neighbours[i + 2].x);
    __m128 nx = _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
           ny = _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    __m128 r = neighbour_radius != NULL ? _mm_loadu_ps(neighbour_radius + i) : own;
    __m128 reach = _mm_add_ps(base, r);
    __m128 ax = _mm_sub_ps(sx, nx), ay = _mm_sub_ps(sy, ny);
    __m128 d2 = _mm_add_ps(_mm_mul_ps(ax, ax), _mm_mul_ps(ay, ay));
    /* reach > 0 and not d2 >= reach^2, NaN handled as the scalar test does. */
    __m128 in = _mm_and_ps(_mm_cmpgt_ps(reach, zero), _mm_cmpnge_ps(d2, _mm_mul_ps(reach, reach)));
    __m128 d = _mm_sqrt_ps(d2);
    int live = _mm_movemask_ps(in);
    if (live == 0)
      continue;
    if (_mm_movemask_ps(_mm_and_ps(in, _mm_cmpgt_ps(d, zero))) != live) {
      /* A coincident neighbour among these four: the scalar path for all. */
      for (int j = i; j < i + 4; j++) {
        vec2 push;
        float rj = neighbour_radius != NULL ? neighbour_radius[j] : l->radius;
        if (separation_push(s, l, p, neighbours[j], rj, &push))
          o.linear = v2_add(o.linear, push);
      }
      continue;
    }
    __m128 inv = _mm_div_ps(one, d);
    __m128 f = _mm_div_ps(_mm_mul_ps(acc, _mm_sub_ps(reach, d)), reach);
    float px[4], py[4];
    _mm_storeu_ps(px, _mm_mul_ps(_mm_mul_ps(ax, inv), f));
    _mm_storeu_ps(py, _mm_mul_ps(_mm_mul_ps(ay, inv), f));
    for (int j = 0; j < 4; j++) {
      if (live & (1 << j)) {
        o.linear.x += px[j];
        o.linear.y += py[j];
      }
    }
  }
#endif
  for (; i < count; i++) {
    vec2 push;
    float r = neighbour_radius != NULL ? neighbour_radius[i] : l->radius;
    if (separation_push(s, l, p, neighbours[i], r, &push))
      o.linear = v2_add(o.linear, push);
  }
  o.linear = v2_clip(o.linear, l->max_acceleration);
  return o;
}

steer_output steer_brake(const steer_state *s, const steer_limits *l, const steer_params *p) {
  steer_output o;
  o.linear = seek_linear(s, l, p, v2(0.0f, 0.0f));
  o.angular = brake_rotation(s, l, p);
  return o;
}

steer_output steer_blend(const steer_output *outputs, const float *weights, int count,
                         const steer_limits *l) {
  steer_output o = output_zero();
  for (int i = 0; i < count; i++) {
    float w = weights != NULL ? weights[i] : 1.0f;
    o.linear = v2_add(o.linear, v2_scale(outputs[i].linear, w));
    o.angular += outputs[i].angular * w;
  }
  o.linear = v2_clip(o.linear, l->max_acceleration);
  o.angular = clip_abs(o.angular, l->max_angular_acceleration);
  return o;
}

steer_output steer_priority(const steer_output *outputs, int count, float epsilon) {
  for (int i = 0; i < count; i++) {
    if (v2_len2(outputs[i].linear) > epsilon * epsilon || fabsf(outputs[i].angular) > epsilon)
      return outputs[i];
  }
  return output_zero();
}

float steer_heading_turn_toward(const steer_state *s, const steer_limits *l, float speed, vec2 target) {
  vec2 dir = v2_sub(target, s->position);
  if (v2_len2(dir) == 0.0f)
    return 0.0f;
  /* Seed 004: the heading converges faster the faster the agent moves. */
  float diff = steer_wrap_angle(steer_orientation_of(dir) - s->orientation);
  return clip_abs(diff * speed, l->max_rotation);
}

void steer_integrate_kinematic(steer_state *s, const steer_limits *l, steer_kinematic_output o, float dt) {
  if (!(dt > 0.0f))
    return;
  s->velocity = v2_clip(o.velocity, l->max_speed);
  s->rotation = clip_abs(o.rotation, l->max_rotation);
  s->position = v2_add(s->position, v2_scale(s->velocity, dt));
  if (s->rotation != 0.0f)
    s->orientation += s->rotation * dt;
  else if (v2_len2(s->velocity) > 0.0f)
    s->orientation = steer_orientation_of(s->velocity);
  s->orientation = steer_wrap_angle(s->orientation);
}

void steer_integrate_dynamic(steer_state *s, const steer_limits *l, steer_output o, float dt) {
  if (!(dt > 0.0f))
    return;
  /* Behaviours clip their own output; clipping again makes the limit hold for
   * callers that combine outputs by hand. */
  vec2 linear = v2_clip(o.linear, l->max_acceleration);
  float angular = clip_abs(o.angular, l->max_angular_acceleration);
  s->velocity = v2_clip(v2_add(s->velocity, v2_scale(linear, dt)), l->max_speed);
  s->rotation = clip_abs(s->rotation + angular * dt, l->max_rotation);
  s->position = v2_add(s->position, v2_scale(s->velocity, dt));
  s->orientation = steer_wrap_angle(s->orientation + s->rotation * dt);
}

void steer_integrate_heading(steer_state *s, const steer_limits *l, steer_heading_output o, float dt) {
  if (!(dt > 0.0f))
    return;
  float speed = v2_len(s->velocity);
  float want = steer_clampf(o.speed, 0.0f, l->max_speed);
  float step = l->max_acceleration * dt;
  speed = want > speed ? fminf(want, speed + step) : fmaxf(want, speed - step);
  if (speed > l->max_speed)
    speed = l->max_speed;
  s->rotation = clip_abs(o.rotation, l->max_rotation);
  s->orientation = steer_wrap_angle(s->orientation + s->rotation * dt);
  vec2 heading = steer_heading(s->orientation);
  s->position = v2_add(s->position, v2_scale(heading, speed * dt));
  s->velocity = v2_scale(heading, speed);
}

#if STEER_SIMD
#define BL_W 4
#include "simdw.h" /* the helpers and the batch kinds' steering, four lanes (varrive_look_4, ...) */

/* The lanes' ends (f4_finish_lanes) of the kernels below. */
typedef struct arrive_look_lanes {
  const steer_state *const *s;
  const steer_limits *const *l;
  const steer_params *const *p;
  const vec2 *target;
  steer_output *out;
} arrive_look_lanes;

static inline void arrive_look_keep(void *ctx, int i, const float (*r)[4]) {
  arrive_look_lanes *c = ctx;
  c->out[i].linear = v2(r[0][i], r[1][i]);
  c->out[i].angular = r[2][i];
}

static inline void arrive_look_redo(void *ctx, int i) {
  arrive_look_lanes *c = ctx;
  c->out[i].linear = steer_arrive(c->s[i], c->l[i], c->p[i], c->target[i]).linear;
  c->out[i].angular = steer_look_where_going(c->s[i], c->l[i], c->p[i]).angular;
}

typedef struct wander_lanes {
  const steer_state *const *s;
  const steer_limits *const *l;
  const steer_params *const *p;
  float *const *wander_orientation;
  steer_rng *const *rng;
  const steer_rng *saved; /* the generators before the batch */
  float dt;
  steer_output *out;
} wander_lanes;

static inline void wander_keep(void *ctx, int i, const float (*r)[4]) {
  wander_lanes *c = ctx;
  c->out[i].linear = v2(r[0][i], r[1][i]);
  c->out[i].angular = r[2][i];
  *c->wander_orientation[i] = r[3][i];
}

static inline void wander_redo(void *ctx, int i) {
  wander_lanes *c = ctx;
  *c->rng[i] = c->saved[i];
  c->out[i] = steer_wander(c->s[i], c->l[i], c->p[i], c->wander_orientation[i], c->rng[i], c->dt);
}

/* Both integrators: results position, velocity, orientation, rotation. */
typedef struct integrate_lanes {
  steer_state *const *s;
  const steer_limits *const *l;
  const steer_output *dyn;         /* dynamic outputs, or NULL */
  const steer_heading_output *hdg; /* heading outputs */
  float dt;
} integrate_lanes;

static inline void integrate_keep(void *ctx, int i, const float (*r)[4]) {
  integrate_lanes *c = ctx;
  c->s[i]->position = v2(r[0][i], r[1][i]);
  c->s[i]->velocity = v2(r[2][i], r[3][i]);
  c->s[i]->orientation = r[4][i];
  c->s[i]->rotation = r[5][i];
}

static inline void integrate_dynamic_redo(void *ctx, int i) {
  integrate_lanes *c = ctx;
  steer_integrate_dynamic(c->s[i], c->l[i], c->dyn[i], c->dt);
}

static inline void integrate_heading_redo(void *ctx, int i) {
  integrate_lanes *c = ctx;
  steer_integrate_heading(c->s[i], c->l[i], c->hdg[i], c->dt);
}
#endif

int steer_arrive_look_x4(const steer_state *const s[4], const steer_limits *const l[4],
                         const steer_params *const p[4], const vec2 target[4], steer_output out[4]) {
#if STEER_SIMD
#define LANES(field) _mm_setr_ps(field(0), field(1), field(2), field(3))
#define PX(i)        s[i]->position.x
#define PY(i)        s[i]->position.y
#define VX(i)        s[i]->velocity.x
#define VY(i)        s[i]->velocity.y
#define TH(i)        s[i]->orientation
#define OM(i)        s[i]->rotation
#define TX(i)        target[i].x
#define TY(i)        target[i].y
#define MS(i)        l[i]->max_speed
#define MA(i)        l[i]->max_acceleration
#define MR(i)        l[i]->max_rotation
#define MAA(i)       l[i]->max_angular_acceleration
#define TTT(i)       p[i]->time_to_target
#define TR(i)        p[i]->target_radius
#define SR(i)        p[i]->slow_radius
#define ATR(i)       p[i]->align_target_radius
#define ASR(i)       p[i]->align_slow_radius
#define ATTT(i)      p[i]->align_time_to_target
  /* The lanes of the limits and parameters, laid out as world_batch_rec. */
  const f4 f[12] = {LANES(MS), LANES(MA),  LANES(MR),  LANES(MAA),  LANES(TTT), LANES(TR),
                    LANES(SR), LANES(ATR), LANES(ASR), LANES(ATTT), LANES(TX),  LANES(TY)};
  f4 bad = _mm_setzero_ps(), lx, ly, angular;
  varrive_look_4(LANES(PX), LANES(PY), LANES(VX), LANES(VY), LANES(TH), LANES(OM), f, &lx, &ly, &angular,
                 &bad);
  const f4 res[] = {lx, ly, angular};
  arrive_look_lanes lanes = {s, l, p, target, out};
  return f4_finish_lanes(res, 3, bad, 0, arrive_look_keep, arrive_look_redo, &lanes);
#undef LANES
#undef PX
#undef PY
#undef VX
#undef VY
#undef TH
#undef OM
#undef TX
#undef TY
#undef MS
#undef MA
#undef MR
#undef MAA
#undef TTT
#undef TR
#undef SR
#undef ATR
#undef ASR
#undef ATTT
#else
  for (int i = 0; i < 4; i++) {
    out[i].linear = steer_arrive(s[i], l[i], p[i], target[i]).linear;
    out[i].angular = steer_look_where_going(s[i], l[i], p[i]).angular;
  }
  return 0;
#endif
}

int steer_wander_x4(const steer_state *const s[4], const steer_limits *const l[4],
                    const steer_params *const p[4], float *const wander_orientation[4],
                    steer_rng *const rng[4], float dt, steer_output out[4]) {
#if STEER_SIMD
#define LANES(e) _mm_setr_ps(e(0), e(1), e(2), e(3))
#define PX(i)    s[i]->position.x
#define PY(i)    s[i]->position.y
#define TH(i)    s[i]->orientation
#define OM(i)    s[i]->rotation
#define MA(i)    l[i]->max_acceleration
#define MR(i)    l[i]->max_rotation
#define MAA(i)   l[i]->max_angular_acceleration
#define WR(i)    p[i]->wander_rate
#define WO(i)    p[i]->wander_offset
#define WRAD(i)  p[i]->wander_radius
#define ATR(i)   p[i]->align_target_radius
#define ASR(i)   p[i]->align_slow_radius
#define ATTT(i)  p[i]->align_time_to_target
#define WA(i)    (*wander_orientation[i])
#define BIN(i)   bin[i]
  /* The generators advance here, as in steer_wander; a lane redone by the
   * scalar code starts again from its saved generator. */
  steer_rng saved[4];
  float bin[4];
  for (int i = 0; i < 4; i++) {
    saved[i] = *rng[i];
    bin[i] = steer_rng_binomial(rng[i]);
  }
  const f4 zero = _mm_setzero_ps();
  const f4 f[12] = {zero,        LANES(MA),  LANES(MR),  LANES(MAA),  LANES(WR), LANES(WO),
                    LANES(WRAD), LANES(ATR), LANES(ASR), LANES(ATTT), zero,      zero};
  f4 bad = zero, lx, ly, angular, wa;
  vwander_4(LANES(PX), LANES(PY), LANES(TH), LANES(OM), LANES(WA), LANES(BIN), f4_set(dt), f, &lx, &ly,
            &angular, &wa, &bad);
  const f4 res[] = {lx, ly, angular, wa};
  wander_lanes lanes = {s, l, p, wander_orientation, rng, saved, dt, out};
  return f4_finish_lanes(res, 4, bad, 0, wander_keep, wander_redo, &lanes);
#undef LANES
#undef PX
#undef PY
#undef TH
#undef OM
#undef MA
#undef MR
#undef MAA
#undef WR
#undef WO
#undef WRAD
#undef ATR
#undef ASR
#undef ATTT
#undef WA
#undef BIN
#else
  for (int i = 0; i < 4; i++)
    out[i] = steer_wander(s[i], l[i], p[i], wander_orientation[i], rng[i], dt);
  return 0;
#endif
}

int steer_integrate_dynamic_x4(steer_state *const s[4], const steer_limits *const l[4],
                               const steer_output o[4], float dt) {
#if STEER_SIMD
  if (dt > 0.0f) {
#define LANES(e) _mm_setr_ps(e(0), e(1), e(2), e(3))
#define PX(i)    s[i]->position.x
#define PY(i)    s[i]->position.y
#define VX(i)    s[i]->velocity.x
#define VY(i)    s[i]->velocity.y
#define TH(i)    s[i]->orientation
#define OM(i)    s[i]->rotation
#define OX(i)    o[i].linear.x
#define OY(i)    o[i].linear.y
#define OA(i)    o[i].angular
#define MS(i)    l[i]->max_speed
#define MA(i)    l[i]->max_acceleration
#define MR(i)    l[i]->max_rotation
#define MAA(i)   l[i]->max_angular_acceleration
    f4 bad = _mm_setzero_ps();
    f4 px = LANES(PX), py = LANES(PY), vx = LANES(VX), vy = LANES(VY), th = LANES(TH), rot = LANES(OM);
    vintegrate_dynamic_4(LANES(OX), LANES(OY), LANES(OA), LANES(MS), LANES(MA), LANES(MR), LANES(MAA),
                         f4_set(dt), &px, &py, &vx, &vy, &th, &rot, &bad);
    const f4 res[] = {px, py, vx, vy, th, rot};
    integrate_lanes lanes = {s, l, o, NULL, dt};
    return f4_finish_lanes(res, 6, bad, 0, integrate_keep, integrate_dynamic_redo, &lanes);
#undef LANES
#undef PX
#undef PY
#undef VX
#undef VY
#undef TH
#undef OM
#undef OX
#undef OY
#undef OA
#undef MS
#undef MA
#undef MR
#undef MAA
  }
#endif
  for (int i = 0; i < 4; i++)
    steer_integrate_dynamic(s[i], l[i], o[i], dt);
  return 0;
}

int steer_integrate_heading_x4(steer_state *const s[4], const steer_limits *const l[4],
                               const steer_heading_output o[4], float dt) {
#if STEER_SIMD
  if (dt > 0.0f) {
#define LANES(e) _mm_setr_ps(e(0), e(1), e(2), e(3))
#define PX(i)    s[i]->position.x
#define PY(i)    s[i]->position.y
#define VX(i)    s[i]->velocity.x
#define VY(i)    s[i]->velocity.y
#define TH(i)    s[i]->orientation
#define OS(i)    o[i].speed
#define OR(i)    o[i].rotation
#define MS(i)    l[i]->max_speed
#define MA(i)    l[i]->max_acceleration
#define MR(i)    l[i]->max_rotation
    f4 bad = _mm_setzero_ps();
    f4 vx = LANES(VX), vy = LANES(VY), px = LANES(PX), py = LANES(PY), th = LANES(TH), rot;
    f4 speed = _mm_sqrt_ps(_mm_add_ps(_mm_mul_ps(vx, vx), _mm_mul_ps(vy, vy)));
    vintegrate_heading_4(LANES(OR), LANES(OS), speed, LANES(MS), LANES(MA), LANES(MR), f4_set(dt), &px, &py,
                         &vx, &vy, &th, &rot, &bad);
    const f4 res[] = {px, py, vx, vy, th, rot};
    integrate_lanes lanes = {s, l, NULL, o, dt};
    return f4_finish_lanes(res, 6, bad, 0, integrate_keep, integrate_heading_redo, &lanes);
#undef LANES
#undef PX
#undef PY
#undef VX
#undef VY
#undef TH
#undef OS
#undef OR
#undef MS
#undef MA
#undef MR
  }
#endif
  for (int i = 0; i < 4; i++)
    steer_integrate_heading(s[i], l[i], o[i], dt);
  return 0;
}
