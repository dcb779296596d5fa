/* goto.c: see goto.h. */
#include "goto.h"

#include <stdlib.h>

steer_planner *steerd_goto_create(const steer_world *w, uint32_t budget) {
  steer_planner_config pc = steer_default_planner_config();
  if (budget)
    pc.budget = budget;
  return steer_planner_create(w, &pc);
}

int steerd_goto_restore(steer_planner *p, const steerd_persist_server *st) {
  if (!st->planner_len)
    return STEER_OK; /* a version 2 file: nobody was in GOTO */
  return steer_planner_load(p, st->planner, st->planner_len);
}

/* Whether the planner holds anything worth saving. */
static int planner_idle(const steer_planner *p) {
  return steer_planner_active(p) == 0 && steer_planner_get_stats(p).queued == 0;
}

int steerd_goto_save(const steer_planner *p, uint8_t **buf, size_t *cap, steerd_persist_server *st) {
  st->planner = NULL;
  st->planner_len = 0;
  if (planner_idle(p))
    return STEER_OK;
  size_t need = steer_planner_state_size(p);
  if (*cap < need) {
    uint8_t *b = realloc(*buf, need);
    if (!b)
      return STEER_ENOMEM;
    *buf = b;
    *cap = need;
  }
  size_t len = 0;
  int rc = steer_planner_save(p, *buf, *cap, &len);
  if (rc != STEER_OK)
    return rc;
  st->planner = *buf;
  st->planner_len = len;
  return STEER_OK;
}

void steerd_goto_forget(steer_planner *p, steer_id id) { (void)steer_planner_cancel(p, id); }

void steerd_goto_before_step(steer_planner *p, steer_world *w) { steer_planner_update(p, w); }

void steerd_goto_after_step(steer_planner *p, const steer_world *w) { steer_planner_observe(p, w); }
