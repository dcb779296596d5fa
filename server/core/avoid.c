/* avoid.c: time-to-collision avoidance of agents and feeler avoidance of the
 * map (see avoid.h for the model and why). */
#include "avoid.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#define AVOID_SIMD 1
#else
#define AVOID_SIMD 0
#endif

#define AVOID_SIDE    0.5f /* weight of the pass-on-the-right term when head on */
#define LANE_RANGE    6.0f /* m, oncoming agents this far ahead make an agent keep right */
#define LANE_WIDTH    0.3f /* m, beyond both radii: an oncoming agent further to the side is passing clear */
#define LANE_ONCOMING 0.2f /* of max_speed: slower toward us is not oncoming */
#define LANE_STRENGTH 1.0f /* of max_speed, the sideways velocity added at full oncoming traffic */
#define LANE_NEAR     0.3f /* m, beyond both radii: a neighbour this near ahead presses against us */
#define LANE_PRESS    0.5f /* lane weight of each such neighbour that comes toward us */

float steer_avoid_share(uint8_t own, uint8_t other, int other_avoids) {
  if (!other_avoids)
    return 2.0f;
  return 2.0f * ((float)other + 1.0f) / ((float)own + (float)other + 2.0f);
}

/* The push of one neighbour that is not touching us (c >= 0), or zero. The
 * SSE path below performs exactly these operations in this order on four
 * neighbours at once, so both give the same bits. */
static vec2 ttc_push(vec2 w, vec2 vr, float c, float max_acc, float horizon, float share) {
  float b = w.x * vr.x + w.y * vr.y;
  float a = vr.x * vr.x + vr.y * vr.y;
  float disc = b * b - a * c;
  if (!(b > 0.0f) || !(disc > 0.0f))
    return v2(0.0f, 0.0f); /* not closing, or passing clear */
  float tau = c / (b + sqrtf(disc));
  if (!(tau < horizon))
    return v2(0.0f, 0.0f);
  float dx = vr.x * tau - w.x, dy = vr.y * tau - w.y; /* our position minus theirs at tau */
  float dl = sqrtf(dx * dx + dy * dy);
  float ia = 1.0f / sqrtf(a);
  float ux = vr.x * ia, uy = vr.y * ia;
  if (!(dl > 0.0f)) { /* touching exactly at tau: push along -w */
    dx = -w.x;
    dy = -w.y;
    dl = sqrtf(dx * dx + dy * dy);
  }
  dx = dx / dl;
  dy = dy / dl;
  /* Head on, the push opposes the motion: add a part toward the right of the
   * relative velocity, so both agents of the pair pass on their right. */
  float h = -(dx * ux + dy * uy);
  h = h > 0.0f ? h * AVOID_SIDE : 0.0f;
  dx = dx + uy * h;
  dy = dy - ux * h;
  float l = sqrtf(dx * dx + dy * dy);
  float mag = max_acc * (horizon - tau) / (horizon * (1.0f + tau)) * share / l;
  return v2(dx * mag, dy * mag);
}

/* Touching already: push straight apart, harder the deeper. */
static vec2 contact_push(vec2 w, float R, float d2, float max_acc, float share, float tie) {
  float d = sqrtf(d2);
  vec2 dir = d > 0.0f ? v2_scale(w, -1.0f / d) : v2(tie, 0.0f);
  float depth = R > 0.0f ? (R - d) / R : 1.0f;
  return v2_scale(dir, max_acc * (1.0f + 3.0f * depth) * share);
}

/* The push of neighbour k, whichever case applies. */
static vec2 push_of(vec2 p, vec2 v, float r, float max_acc, float horizon, const steer_avoid_set *n, int k) {
  vec2 w = v2(n->px[k] - p.x, n->py[k] - p.y), vr = v2(v.x - n->vx[k], v.y - n->vy[k]);
  float R = r + n->r[k], d2 = w.x * w.x + w.y * w.y, c = d2 - R * R;
  return c < 0.0f ? contact_push(w, R, d2, max_acc, n->share[k], n->tie[k])
                  : ttc_push(w, vr, c, max_acc, horizon, n->share[k]);
}

vec2 steer_avoid_agents(vec2 p, vec2 v, float r, float max_acc, float horizon, steer_avoid_set *n) {
  vec2 f = v2(0.0f, 0.0f);
  int count = n->count < STEER_AVOID_MAX ? n->count : STEER_AVOID_MAX;
  if (!(horizon > 0.0f) || count <= 0)
    return f;
  float fx[STEER_AVOID_MAX + 4], fy[STEER_AVOID_MAX + 4];
  int i = 0;
#if AVOID_SIMD
  /* Pad to a multiple of 4 with neighbours that never push: far away and
   * moving with us (not closing). */
  for (int k = count; k & 3; k++) {
    n->px[k] = p.x + 1e6f;
    n->py[k] = p.y;
    n->vx[k] = v.x;
    n->vy[k] = v.y;
    n->r[k] = 0.0f;
    n->share[k] = 0.0f;
    n->tie[k] = 1.0f;
  }
  const __m128 zero = _mm_setzero_ps(), one = _mm_set1_ps(1.0f), side = _mm_set1_ps(AVOID_SIDE);
  const __m128 hz = _mm_set1_ps(horizon), acc = _mm_set1_ps(max_acc);
  const __m128 px = _mm_set1_ps(p.x), py = _mm_set1_ps(p.y), ovx = _mm_set1_ps(v.x), ovy = _mm_set1_ps(v.y);
  const __m128 own = _mm_set1_ps(r);
  for (; i < count; i += 4) {
    __m128 wx = _mm_sub_ps(_mm_loadu_ps(n->px + i), px), wy = _mm_sub_ps(_mm_loadu_ps(n->py + i), py);
    __m128 vx = _mm_sub_ps(ovx, _mm_loadu_ps(n->vx + i)), vy = _mm_sub_ps(ovy, _mm_loadu_ps(n->vy + i));
    __m128 R = _mm_add_ps(own, _mm_loadu_ps(n->r + i)), sh = _mm_loadu_ps(n->share + i);
    __m128 d2 = _mm_add_ps(_mm_mul_ps(wx, wx), _mm_mul_ps(wy, wy));
    __m128 c = _mm_sub_ps(d2, _mm_mul_ps(R, R));
    __m128 b = _mm_add_ps(_mm_mul_ps(wx, vx), _mm_mul_ps(wy, vy));
    __m128 a = _mm_add_ps(_mm_mul_ps(vx, vx), _mm_mul_ps(vy, vy));
    __m128 disc = _mm_sub_ps(_mm_mul_ps(b, b), _mm_mul_ps(a, c));
    __m128 live = _mm_and_ps(_mm_cmpgt_ps(b, zero), _mm_cmpgt_ps(disc, zero));
    if (_mm_movemask_ps(_mm_cmplt_ps(c, zero)) || _mm_movemask_ps(_mm_cmpunord_ps(c, b))) {
      for (int k = i; k < i + 4; k++) { /* touching (or not finite): the scalar path for these four */
        vec2 q = push_of(p, v, r, max_acc, horizon, n, k);
        fx[k] = q.x;
        fy[k] = q.y;
      }
      continue;
    }
    if (_mm_movemask_ps(live) == 0) {
      _mm_storeu_ps(fx + i, zero);
      _mm_storeu_ps(fy + i, zero);
      continue;
    }
    /* Dead lanes compute on safe values and are masked out at the end. */
    __m128 sdisc = _mm_and_ps(live, disc), sb = _mm_or_ps(_mm_and_ps(live, b), _mm_andnot_ps(live, one));
    __m128 sa = _mm_or_ps(_mm_and_ps(live, a), _mm_andnot_ps(live, one));
    __m128 tau = _mm_div_ps(c, _mm_add_ps(sb, _mm_sqrt_ps(sdisc)));
    live = _mm_and_ps(live, _mm_cmplt_ps(tau, hz));
    __m128 dx = _mm_sub_ps(_mm_mul_ps(vx, tau), wx), dy = _mm_sub_ps(_mm_mul_ps(vy, tau), wy);
    __m128 dl = _mm_sqrt_ps(_mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy)));
    __m128 ia = _mm_div_ps(one, _mm_sqrt_ps(sa));
    __m128 ux = _mm_mul_ps(vx, ia), uy = _mm_mul_ps(vy, ia);
    if (_mm_movemask_ps(_mm_and_ps(live, _mm_cmpgt_ps(dl, zero))) != _mm_movemask_ps(live)) {
      for (int k = i; k < i + 4; k++) { /* a degenerate direction: the scalar path */
        vec2 q = push_of(p, v, r, max_acc, horizon, n, k);
        fx[k] = q.x;
        fy[k] = q.y;
      }
      continue;
    }
    __m128 sdl = _mm_or_ps(_mm_and_ps(live, dl), _mm_andnot_ps(live, one));
    dx = _mm_div_ps(dx, sdl);
    dy = _mm_div_ps(dy, sdl);
    __m128 h = _mm_sub_ps(zero, _mm_add_ps(_mm_mul_ps(dx, ux), _mm_mul_ps(dy, uy)));
    h = _mm_and_ps(_mm_cmpgt_ps(h, zero), _mm_mul_ps(h, side));
    dx = _mm_add_ps(dx, _mm_mul_ps(uy, h));
    dy = _mm_sub_ps(dy, _mm_mul_ps(ux, h));
    __m128 l = _mm_sqrt_ps(_mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy)));
    l = _mm_or_ps(_mm_and_ps(live, l), _mm_andnot_ps(live, one));
    __m128 mag = _mm_div_ps(_mm_mul_ps(acc, _mm_sub_ps(hz, tau)), _mm_mul_ps(hz, _mm_add_ps(one, tau)));
    mag = _mm_div_ps(_mm_mul_ps(mag, sh), l);
    mag = _mm_and_ps(live, mag);
    _mm_storeu_ps(fx + i, _mm_and_ps(live, _mm_mul_ps(dx, mag))); /* dead lanes may hold inf * 0 */
    _mm_storeu_ps(fy + i, _mm_and_ps(live, _mm_mul_ps(dy, mag)));
  }
#else
  for (; i < count; i++) {
    vec2 q = push_of(p, v, r, max_acc, horizon, n, i);
    fx[i] = q.x;
    fy[i] = q.y;
  }
#endif
  /* Summed in neighbour order whichever path computed the pushes. */
  for (int k = 0; k < count; k++) {
    f.x += fx[k];
    f.y += fy[k];
  }
  if (!isfinite(f.x) || !isfinite(f.y))
    return v2(0.0f, 0.0f); /* a neighbour's state was not finite: no push rather than a NaN */
  return v2_clip(f, max_acc);
}

vec2 steer_avoid_lane(vec2 p, vec2 want, float r, float max_speed, steer_avoid_set *n) {
  float wl = sqrtf(want.x * want.x + want.y * want.y);
  if (!(wl > 0.1f) || !(max_speed > 0.0f))
    return want;
  const float ux = want.x / wl, uy = want.y / wl, rx = uy, ry = -ux; /* ahead, and to our right */
  const float inv_speed = 1.0f / max_speed, inv_range = 1.0f / LANE_RANGE;
  int count = n->count < STEER_AVOID_MAX ? n->count : STEER_AVOID_MAX;
  if (count <= 0)
    return want;
  /* Each neighbour's part, then summed in neighbour order: the vector and the
   * scalar code give the same sum bit for bit. */
  float part[STEER_AVOID_MAX + 4];
  int i = 0;
#if AVOID_SIMD
  /* Pad to a multiple of 4 with neighbours that never count: far away (a
   * neighbour 1e6 m off is neither near nor within the corridor's width). */
  for (int k = count; k & 3; k++) {
    n->px[k] = p.x + 1e6f;
    n->py[k] = p.y;
    n->vx[k] = 0.0f;
    n->vy[k] = 0.0f;
    n->r[k] = 0.0f;
    n->share[k] = 0.0f;
    n->tie[k] = 1.0f;
  }
  const __m128 sign = _mm_set1_ps(-0.0f), zero = _mm_setzero_ps(), one = _mm_set1_ps(1.0f);
  const __m128 vux = _mm_set1_ps(ux), vuy = _mm_set1_ps(uy), vrx = _mm_set1_ps(rx), vry = _mm_set1_ps(ry);
  const __m128 px = _mm_set1_ps(p.x), py = _mm_set1_ps(p.y), own = _mm_set1_ps(r);
  const __m128 isp = _mm_set1_ps(inv_speed), irange = _mm_set1_ps(inv_range), range = _mm_set1_ps(LANE_RANGE);
  const __m128 lnear = _mm_set1_ps(LANE_NEAR), lwidth = _mm_set1_ps(LANE_WIDTH), quarter = _mm_set1_ps(0.25f);
  const __m128 onc = _mm_set1_ps(LANE_ONCOMING), press_w = _mm_set1_ps(LANE_PRESS);
  for (; i < count; i += 4) {
    __m128 dx = _mm_sub_ps(_mm_loadu_ps(n->px + i), px), dy = _mm_sub_ps(_mm_loadu_ps(n->py + i), py);
    __m128 ahead = _mm_add_ps(_mm_mul_ps(dx, vux), _mm_mul_ps(dy, vuy));
    __m128 lat = _mm_add_ps(_mm_mul_ps(dx, vrx), _mm_mul_ps(dy, vry));
    __m128 vel =
        _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(n->vx + i), vux), _mm_mul_ps(_mm_loadu_ps(n->vy + i), vuy));
    __m128 on = _mm_mul_ps(_mm_xor_ps(vel, sign), isp);
    __m128 d2 = _mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy));
    __m128 rr = _mm_add_ps(_mm_loadu_ps(n->r + i), own);
    __m128 near = _mm_add_ps(rr, lnear), width = _mm_add_ps(rr, lwidth);
    __m128 in_front = _mm_and_ps(_mm_cmpgt_ps(ahead, zero), _mm_cmplt_ps(ahead, range));
    __m128 press = _mm_and_ps(
        _mm_cmplt_ps(d2, _mm_mul_ps(near, near)),
        _mm_and_ps(_mm_cmpgt_ps(_mm_mul_ps(ahead, ahead), _mm_mul_ps(quarter, d2)), _mm_cmpgt_ps(on, zero)));
    __m128 oncoming =
        _mm_and_ps(_mm_cmpgt_ps(on, onc),
                   _mm_and_ps(_mm_cmple_ps(lat, width), _mm_cmpge_ps(lat, _mm_xor_ps(width, sign))));
    __m128 o_w = _mm_mul_ps(on, _mm_sub_ps(one, _mm_mul_ps(ahead, irange)));
    __m128 wgt = _mm_or_ps(_mm_and_ps(press, press_w), _mm_andnot_ps(press, _mm_and_ps(oncoming, o_w)));
    _mm_storeu_ps(part + i, _mm_and_ps(in_front, _mm_mul_ps(wgt, _mm_loadu_ps(n->share + i))));
  }
#else
  for (; i < count; i++) {
    float dx = n->px[i] - p.x, dy = n->py[i] - p.y;
    float ahead = dx * ux + dy * uy, lat = dx * rx + dy * ry;
    float on = -(n->vx[i] * ux + n->vy[i] * uy) * inv_speed;
    float d2 = dx * dx + dy * dy, near = n->r[i] + r + LANE_NEAR, width = n->r[i] + r + LANE_WIDTH;
    int in_front = ahead > 0.0f && ahead < LANE_RANGE;
    int press = d2 < near * near && ahead * ahead > 0.25f * d2 && on > 0.0f;
    int oncoming = on > LANE_ONCOMING && lat <= width && lat >= -width;
    float wgt = press ? LANE_PRESS : oncoming ? on * (1.0f - ahead * inv_range) : 0.0f;
    part[i] = in_front ? wgt * n->share[i] : 0.0f;
  }
#endif
  /* Pressed against one ahead (within 60 degrees of our way) that comes
   * toward us, however slowly: in a jam of two facing crowds everyone
   * sliding to their own right is what unpicks it. One that walks our way,
   * however slowly (a queue at a door), does not count: sliding right there
   * only pushes the queue into the wall beside the door. Oncoming: faster
   * than LANE_ONCOMING toward us and not clear to either side, by nearness.
   * Each by its share: a bully keeps its line. */
  float lane = 0.0f;
  for (int k = 0; k < count; k++)
    lane += part[k];
  if (!(lane > 0.0f))
    return want;
  lane = (lane < 1.0f ? lane : 1.0f) * LANE_STRENGTH * max_speed;
  return v2_clip(v2(want.x + rx * lane, want.y + ry * lane), max_speed);
}

vec2 steer_avoid_walls(const steer_map *m, vec2 p, float r, vec2 v_des, float lookahead, float margin) {
  if (!(lookahead > 0.0f) || steer_map_count(m) == 0)
    return v_des;
  float speed = v2_len(v_des);
  if (speed < 1e-3f)
    return v_des;
  float t;
  vec2 n;
  if (!steer_map_cast(m, p, v2_scale(v_des, lookahead), r + margin, &t, &n))
    return v_des;
  float urgency = 1.0f - t;
  vec2 tang = v2_sub(v_des, v2_scale(n, v2_dot(v_des, n)));
  float tl = v2_len(tang);
  if (tl < 0.05f * speed)
    tang = v2(-n.y, n.x); /* square on: along the surface, to the right of the way in */
  else
    tang = v2_scale(tang, 1.0f / tl);
  vec2 out = v2_add(v_des, v2_scale(v2_sub(v2_scale(tang, speed), v_des), urgency));
  /* A second surface on the turned way (a corner): take out what goes into it. */
  float t2;
  vec2 n2;
  if (steer_map_cast(m, p, v2_scale(out, lookahead), r + margin, &t2, &n2)) {
    float on = v2_dot(out, n2);
    if (on < 0.0f)
      out = v2_sub(out, v2_scale(n2, on * (1.0f - t2)));
  }
  return out;
}
