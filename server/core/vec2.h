/* vec2.h: 2D vector and angle helpers for the movement core.
 *
 * Conventions (normative, see protocol/PROTOCOL.md): metres, seconds, radians.
 * heading(theta) = (cos theta, sin theta), so theta = atan2(v.y, v.x); angles are
 * kept in (-pi, pi]. */
#ifndef STEER_VEC2_H
#define STEER_VEC2_H

#include <math.h>

#define STEER_PI 3.14159265358979323846f
#define STEER_TWO_PI 6.28318530717958647692f

typedef struct vec2 {
  float x; /* m (or m/s, m/s^2) */
  float y;
} vec2;

static inline vec2 v2(float x, float y) {
  vec2 r = {x, y};
  return r;
}
static inline vec2 v2_add(vec2 a, vec2 b) { return v2(a.x + b.x, a.y + b.y); }
static inline vec2 v2_sub(vec2 a, vec2 b) { return v2(a.x - b.x, a.y - b.y); }
static inline vec2 v2_scale(vec2 a, float s) { return v2(a.x * s, a.y * s); }
static inline float v2_dot(vec2 a, vec2 b) { return a.x * b.x + a.y * b.y; }
/* z of the 3D cross product: > 0 when b is counter-clockwise from a. */
static inline float v2_cross(vec2 a, vec2 b) { return a.x * b.y - a.y * b.x; }
static inline float v2_len2(vec2 a) { return a.x * a.x + a.y * a.y; }
static inline float v2_len(vec2 a) { return sqrtf(v2_len2(a)); }

/* Unit vector along a; the zero vector stays zero. */
static inline vec2 v2_norm(vec2 a) {
  float l = v2_len(a);
  return l > 0.0f ? v2_scale(a, 1.0f / l) : v2(0.0f, 0.0f);
}

/* a with its length clipped to max_len (max_len >= 0). */
static inline vec2 v2_clip(vec2 a, float max_len) {
  float l2 = v2_len2(a);
  if (l2 > max_len * max_len && l2 > 0.0f)
    return v2_scale(a, max_len / sqrtf(l2));
  return a;
}

static inline vec2 steer_heading(float theta) { return v2(cosf(theta), sinf(theta)); }

/* Orientation of a direction; callers check for the zero vector first. */
static inline float steer_orientation_of(vec2 dir) { return atan2f(dir.y, dir.x); }

/* Maps any finite angle to (-pi, pi] (seed 000's mapToRange). */
static inline float steer_wrap_angle(float a) {
  if (a > STEER_PI || a <= -STEER_PI) {
    a = fmodf(a + STEER_PI, STEER_TWO_PI);
    if (a <= 0.0f)
      a += STEER_TWO_PI;
    a -= STEER_PI;
  }
  return a;
}

static inline float steer_clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

#endif /* STEER_VEC2_H */
