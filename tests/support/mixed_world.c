/* mixed_world.c: see mixed_world.h. */
#include "mixed_world.h"

#include <math.h>
#include <string.h>

double mixed_world_rnd01(uint64_t *state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*state >> 11) / 9007199254740992.0;
}

void mixed_world_init(mixed_world *m, float side, uint64_t seed) {
  memset(m, 0, sizeof *m);
  m->rng = seed;
  m->side = side;
}

void mixed_world_next(mixed_world *m, proto_command *cmd) {
  const float half = m->side / 2;
  memset(cmd, 0, sizeof *cmd);
  cmd->type = PROTO_MSG_SPAWN;
  proto_spawn *sp = &cmd->spawn;
  sp->model = PROTO_MODEL_DYNAMIC;
  sp->position = proto_v2((float)(mixed_world_rnd01(&m->rng) - 0.5) * m->side,
                          (float)(mixed_world_rnd01(&m->rng) - 0.5) * m->side);
  sp->present = PROTO_SPAWN_LIMITS | PROTO_SPAWN_BEHAVIOUR;
  sp->limits.present = PROTO_LIMIT_MAX_SPEED;
  sp->limits.v.max_speed = (float)(1.0 + 2.0 * mixed_world_rnd01(&m->rng));
  sp->behaviour.kind = PROTO_BEHAVIOUR_WANDER;
  uint32_t kind = m->next++ % 3;
  if (kind == 0) { /* patrol: a loop of 4 points around the spawn point */
    sp->present |= PROTO_SPAWN_PATH;
    proto_path *p = &sp->path;
    p->count = 4;
    p->radius = 1.0f;
    p->mode = PROTO_PATH_LOOP;
    p->cornering = PROTO_CORNER_NONE;
    float r = (float)(5.0 + 10.0 * mixed_world_rnd01(&m->rng));
    for (uint32_t k = 0; k < 4; k++) {
      float x = sp->position.x + (k == 1 || k == 2 ? r : 0.0f), y = sp->position.y + (k >= 2 ? r : 0.0f);
      p->points[k] = proto_v2(fminf(fmaxf(x, -half), half), fminf(fmaxf(y, -half), half));
    }
  } else if (kind == 2 && m->prev) { /* pursue the agent spawned before */
    sp->behaviour.kind = PROTO_BEHAVIOUR_PURSUE;
    sp->behaviour.present = PROTO_BHV_TARGET_AGENT;
    sp->behaviour.target_agent = m->prev;
  }
}

void mixed_world_spawned(mixed_world *m, proto_id id) { m->prev = id; }
