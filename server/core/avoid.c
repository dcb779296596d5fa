/* avoid.c: time-to-collision avoidance of agents and feeler avoidance of the
 * map (see avoid.h for the model and why). */
#include "avoid.h"

#define AVOID_SIDE 0.5f /* weight of the pass-on-the-right term when head on */

float steer_avoid_share(uint8_t own, uint8_t other, int other_avoids) {
  if (!other_avoids)
    return 2.0f;
  return 2.0f * ((float)other + 1.0f) / ((float)own + (float)other + 2.0f);
}

vec2 steer_avoid_agents(vec2 p, vec2 v, float r, float max_acc, float horizon, const steer_avoid_neighbour *n,
                        int count) {
  vec2 f = v2(0.0f, 0.0f);
  if (!(horizon > 0.0f))
    return f;
  for (int i = 0; i < count; i++) {
    vec2 w = v2_sub(n[i].p, p);
    vec2 vr = v2_sub(v, n[i].v);
    float R = r + n[i].r;
    float d2 = v2_len2(w);
    float c = d2 - R * R;
    if (c < 0.0f) {
      /* Already touching: push straight apart, harder the deeper. */
      float d = sqrtf(d2);
      vec2 dir = d > 0.0f ? v2_scale(w, -1.0f / d) : v2(n[i].tie, 0.0f);
      float depth = R > 0.0f ? (R - d) / R : 1.0f;
      f = v2_add(f, v2_scale(dir, max_acc * (1.0f + 3.0f * depth) * n[i].share));
      continue;
    }
    float b = v2_dot(w, vr);
    if (b <= 0.0f)
      continue; /* not closing */
    float a = v2_len2(vr);
    float disc = b * b - a * c;
    if (disc <= 0.0f)
      continue; /* passes clear */
    float tau = c / (b + sqrtf(disc));
    if (tau >= horizon)
      continue;
    vec2 dir = v2_add(v2_scale(w, -1.0f), v2_scale(vr, tau)); /* our position minus theirs at tau */
    float dl = v2_len(dir);
    dir = dl > 0.0f ? v2_scale(dir, 1.0f / dl) : v2_norm(v2_scale(w, -1.0f));
    vec2 u = v2_scale(vr, 1.0f / sqrtf(a));
    float head_on = -v2_dot(dir, u);
    if (head_on > 0.0f)
      dir = v2_norm(v2_add(dir, v2_scale(v2(u.y, -u.x), AVOID_SIDE * head_on)));
    float mag = max_acc * (horizon - tau) / (horizon * (1.0f + tau));
    f = v2_add(f, v2_scale(dir, mag * n[i].share));
  }
  return v2_clip(f, max_acc);
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
