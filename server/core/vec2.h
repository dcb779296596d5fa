/* vec2.h: 2D vector and angle helpers for the movement core.
 *
 * Conventions (normative, see protocol/PROTOCOL.md): metres, seconds, radians.
 * heading(theta) = (cos theta, sin theta), so theta = atan2(v.y, v.x); angles are
 * kept in (-pi, pi]. */
#ifndef STEER_VEC2_H
#define STEER_VEC2_H

#include <float.h>
#include <math.h>

#define STEER_PI     3.14159265358979323846f
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
  if (l2 > max_len * max_len && l2 > 0.0f) {
    if (!(l2 <= FLT_MAX)) { /* the square overflowed (|a| > 1.8e19): scale down first, or a becomes 0 */
      float m = fabsf(a.x) > fabsf(a.y) ? fabsf(a.x) : fabsf(a.y);
      a = v2_scale(a, 1.0f / m);
      l2 = v2_len2(a);
    }
    return v2_scale(a, max_len / sqrtf(l2));
  }
  return a;
}

/* The core's own atan2 and sincos: plain float arithmetic (Cephes' polynomials,
 * errors within 2 ulp over the range the core uses), so every platform and libm
 * gives the same bits, which replays need, and they cost a third of libm's.
 * Built with -ffp-contract=off like the rest of the core. */

/* atan2(y, x) in (-pi, pi]; 0 for the zero vector; (+-0, x < 0) gives +pi. */
static inline float steer_atan2(float y, float x) {
  float ax = fabsf(x), ay = fabsf(y);
  float hi = ax > ay ? ax : ay, lo = ax > ay ? ay : ax;
  if (!(hi > 0.0f))
    return 0.0f;
  float a = lo / hi; /* in [0, 1] */
  /* Above tan(pi/8), atan(a) = pi/4 + atan((a - 1) / (a + 1)). */
  float base = 0.0f;
  if (a > 0.41421356237309503f) {
    base = 0.78539816339744831f;
    a = (a - 1.0f) / (a + 1.0f);
  }
  float z = a * a;
  float r = base +
            ((((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z - 3.33329491539e-1f) *
                 z * a +
             a);
  if (ay > ax)
    r = 1.57079632679489662f - r;
  if (x < 0.0f)
    r = 3.14159265358979324f - r;
  return y < 0.0f ? -r : r;
}

/* sin and cos of theta; exact-argument reduction by pi/2 in three parts, so
 * accurate for |theta| up to ~1e5 rad; beyond that, libm's. */
static inline void steer_sincos(float theta, float *s, float *c) {
  if (!(fabsf(theta) < 1e5f)) {
    *s = sinf(theta);
    *c = cosf(theta);
    return;
  }
  float k = floorf(theta * 0.63661977236758134f + 0.5f);
  float x = ((theta - k * 1.5703125f) - k * 4.8375129699707031e-4f) - k * 7.5497899548918821e-8f;
  float z = x * x;
  float sn = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * x + x;
  float cs = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z -
             0.5f * z + 1.0f;
  switch ((int)k & 3) {
  case 0:
    *s = sn;
    *c = cs;
    break;
  case 1:
    *s = cs;
    *c = -sn;
    break;
  case 2:
    *s = -sn;
    *c = -cs;
    break;
  default:
    *s = -cs;
    *c = sn;
    break;
  }
}

static inline vec2 steer_heading(float theta) {
  vec2 h;
  steer_sincos(theta, &h.y, &h.x);
  return h;
}

/* Orientation of a direction; callers check for the zero vector first. */
static inline float steer_orientation_of(vec2 dir) { return steer_atan2(dir.y, dir.x); }

/* Maps any finite angle, given in double, to (-pi, pi] as the float nearest the
 * exact reduction: the reduction runs in double against 2 pi to 53 bits, so an
 * angle of 1e6 rad is off by about 1e-10 rad before rounding to float (a float
 * reduction was 0.044 rad off: a + pi rounds to the float grid, 0.0625 at 1e6,
 * and the float 2 pi is 1.7e-7 short, times 159 155 turns). */
static inline float steer_wrap_angle_d(double a) {
  const double pi = 3.14159265358979323846, two_pi = 6.28318530717958647692;
  /* Doubles in (pi, STEER_PI] round to STEER_PI, inside the float range, and are kept: so a
   * float result read back as a double maps to itself (a decoder's round trip is exact). */
  if (a > (double)STEER_PI || a <= -(double)STEER_PI) {
    a = fmod(a + pi, two_pi);
    if (a <= 0.0)
      a += two_pi;
    a -= pi;
  }
  float f = (float)a;
  /* The float nearest an angle just above -pi is -STEER_PI, which lies outside (-pi, pi]: the same heading is
   * +pi. */
  return f <= -STEER_PI ? STEER_PI : f;
}

/* Maps any finite angle to (-pi, pi] (seed 000's mapToRange); see steer_wrap_angle_d. */
static inline float steer_wrap_angle(float a) {
  if (a > STEER_PI || a <= -STEER_PI)
    return steer_wrap_angle_d((double)a);
  return a;
}

static inline float steer_clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

#endif /* STEER_VEC2_H */
