/* randcmd.c: see randcmd.h. */
#include "randcmd.h"

#include <string.h>

uint64_t steerd_rand_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint32_t steerd_rand_below(uint64_t *s, uint32_t n) { return n ? (uint32_t)(steerd_rand_next(s) % n) : 0; }

float steerd_rand_range(uint64_t *s, float lo, float hi) {
  return lo + (hi - lo) * (float)((double)(steerd_rand_next(s) >> 11) / 9007199254740992.0);
}

proto_vec2 steerd_rand_point(uint64_t *s, proto_vec2 lo, proto_vec2 hi) {
  proto_vec2 p = {steerd_rand_range(s, lo.x, hi.x), steerd_rand_range(s, lo.y, hi.y)};
  return p;
}

/* Another agent than slot self (and not not_this), or 0. */
static proto_id other_agent(uint64_t *s, const proto_id *agents, uint32_t n, uint32_t self,
                            proto_id not_this) {
  if (n < 2)
    return 0;
  for (int tries = 0; tries < 8; tries++) {
    uint32_t i = steerd_rand_below(s, n);
    if (i != self && agents[i] != not_this)
      return agents[i];
  }
  return 0;
}

void steerd_rand_behaviour(uint64_t *s, proto_vec2 lo, proto_vec2 hi, const proto_id *agents, uint32_t n,
                           uint32_t self, uint8_t model, proto_behaviour *out) {
  static const uint8_t kinematic[] = {PROTO_BEHAVIOUR_NONE, PROTO_BEHAVIOUR_SEEK, PROTO_BEHAVIOUR_FLEE,
                                      PROTO_BEHAVIOUR_ARRIVE, PROTO_BEHAVIOUR_WANDER};
  static const uint8_t heading[] = {PROTO_BEHAVIOUR_NONE, PROTO_BEHAVIOUR_SEEK, PROTO_BEHAVIOUR_ARRIVE,
                                    PROTO_BEHAVIOUR_WANDER};
  memset(out, 0, sizeof *out);
  uint8_t kind;
  if (model == PROTO_MODEL_KINEMATIC)
    kind = kinematic[steerd_rand_below(s, sizeof kinematic)];
  else if (model == PROTO_MODEL_HEADING)
    kind = heading[steerd_rand_below(s, sizeof heading)];
  else
    kind = (uint8_t)steerd_rand_below(s, PROTO_BEHAVIOUR_FOLLOW_PATH); /* dynamic: all but follow_path */
  proto_id t1 = self < n ? other_agent(s, agents, n, self, 0) : 0;
  proto_id t2 = t1 ? other_agent(s, agents, n, self, t1) : 0;
  int needs_agent = kind == PROTO_BEHAVIOUR_VELOCITY_MATCH || kind == PROTO_BEHAVIOUR_PURSUE ||
                    kind == PROTO_BEHAVIOUR_EVADE || kind == PROTO_BEHAVIOUR_INTERPOSE;
  if ((needs_agent && !t1) || (kind == PROTO_BEHAVIOUR_INTERPOSE && !t2))
    kind = PROTO_BEHAVIOUR_ARRIVE; /* not enough agents yet */
  out->kind = kind;
  switch (kind) {
  case PROTO_BEHAVIOUR_SEEK:
  case PROTO_BEHAVIOUR_FLEE:
  case PROTO_BEHAVIOUR_ARRIVE:
  case PROTO_BEHAVIOUR_FACE:
    if (t1 && steerd_rand_below(s, 3) == 0) {
      out->target_agent = t1;
      out->present |= PROTO_BHV_TARGET_AGENT;
    } else {
      out->target = steerd_rand_point(s, lo, hi);
      out->present |= PROTO_BHV_TARGET;
    }
    break;
  case PROTO_BEHAVIOUR_ALIGN:
    out->orientation = steerd_rand_range(s, -3.1f, 3.1f);
    out->present |= PROTO_BHV_ORIENTATION;
    break;
  case PROTO_BEHAVIOUR_VELOCITY_MATCH:
  case PROTO_BEHAVIOUR_PURSUE:
  case PROTO_BEHAVIOUR_EVADE:
    out->target_agent = t1;
    out->present |= PROTO_BHV_TARGET_AGENT;
    break;
  case PROTO_BEHAVIOUR_INTERPOSE:
    out->target_agent = t1;
    out->target_agent2 = t2;
    out->present |= PROTO_BHV_TARGET_AGENT | PROTO_BHV_TARGET_AGENT2;
    break;
  default:
    break; /* none, look_where_going, wander: no target */
  }
}

void steerd_rand_path(uint64_t *s, proto_vec2 lo, proto_vec2 hi, uint32_t max_points, uint8_t model,
                      proto_path *out) {
  memset(out, 0, sizeof *out);
  out->count = 2 + steerd_rand_below(s, max_points > 2 ? max_points - 1 : 1);
  for (uint32_t i = 0; i < out->count; i++)
    out->points[i] = steerd_rand_point(s, lo, hi);
  out->radius = steerd_rand_range(s, 0.5f, 3.0f);
  out->mode = (uint8_t)steerd_rand_below(s, PROTO_PATH_MODE_COUNT);
  out->cornering =
      model == PROTO_MODEL_HEADING ? (uint8_t)steerd_rand_below(s, PROTO_CORNER_COUNT) : PROTO_CORNER_NONE;
}
