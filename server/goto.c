/* goto.c: see goto.h. */
#include "goto.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "wire_core.h"

steer_planner *steerd_goto_create(const steer_world *w, uint32_t budget, uint32_t build_delay, int nav) {
  steer_planner_config pc = steer_default_planner_config();
  pc.budget =
      budget ? budget : (nav == STEER_NAV_GRAPH ? STEER_PLANNER_GRAPH_BUDGET : STEER_PLANNER_MESH_BUDGET);
  pc.build_delay = build_delay;
  pc.nav = (uint8_t)nav;
  return steer_planner_create(w, &pc);
}

uint32_t steerd_goto_warm(steer_planner *p, const steer_world *w) {
  int rc = steer_planner_warm_start(p, w);
  if (rc < 0)
    LOG_WARN("GOTO graphs not all started at start-up (%s): the first plan of such a class builds its own",
             steer_strerror(rc));
  else if (rc > 0)
    LOG_INFO("GOTO: building %d navigation graphs (radius classes in use, %u obstacles) off the loop", rc,
             steer_map_count(steer_world_map(w)));
  return steer_planner_warming(p);
}

int steerd_goto_restore(steer_planner *p, const steerd_persist_server *st) {
  steer_planner_restoring(p); /* which classes are served is the saved state's, not the warm-up's */
  if (!st->planner_len)
    return STEER_OK; /* a version 2 file: nobody was in GOTO */
  return steer_planner_load(p, st->planner, st->planner_len);
}

/* Whether the planner holds anything worth saving. */
static int planner_idle(const steer_planner *p) { return steer_planner_idle(p); }

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

void steerd_goto_map_changed(steer_planner *p, const steer_world *w) { steer_planner_map_changed(p, w); }

void steerd_goto_forget(steer_planner *p, steer_id id) { (void)steer_planner_cancel(p, id); }

void steerd_goto_before_step(steer_planner *p, steer_world *w) { steer_planner_update(p, w); }

void steerd_goto_after_step(steer_planner *p, const steer_world *w) { steer_planner_observe(p, w); }

/* ---- commands ------------------------------------------------------------------ */

steer_goto steerd_goto_request(const proto_behaviour *b) {
  steer_goto g = steer_default_goto();
  if (b->present & PROTO_BHV_TARGET_AGENT) {
    g.target.kind = STEER_TARGET_AGENT;
    g.target.agent = b->target_agent;
  } else if (b->present & PROTO_BHV_TARGET) {
    g.target.kind = STEER_TARGET_POINT;
    g.target.point = wire_to_vec2(b->target);
  } else {
    g.target.kind = STEER_TARGET_NONE;
  }
  if (b->present & PROTO_BHV_NODE_RADIUS)
    g.node_radius = b->node_radius;
  if (b->present & PROTO_BHV_CORNERING)
    g.cornering = b->cornering;
  if (b->present & PROTO_BHV_REPLAN_DISTANCE)
    g.replan_distance = b->replan_distance;
  return g;
}

static int refuse(steerd_goto_refusal *why, int code, const char *field, const char *message) {
  why->code = code;
  why->field = field;
  why->message = message;
  return -1;
}

/* The planner's checks as a wire refusal. */
static int check(const steer_world *w, steer_id id, const steer_goto *g, steerd_goto_refusal *why) {
  if (g->target.kind == STEER_TARGET_NONE)
    return refuse(why, PROTO_ERR_BAD_TARGET, "behaviour.target_agent",
                  "goto needs a target or a target_agent");
  switch (steer_planner_check(w, id, g)) {
  case STEER_OK:
    return 0;
  case STEER_ENOENT:
    return refuse(why, PROTO_ERR_NO_SUCH_AGENT, "agent", steer_strerror(STEER_ENOENT));
  case STEER_EBLOCKED:
    return refuse(why, PROTO_ERR_BLOCKED, "behaviour.target", "the target is inside the map's geometry");
  case STEER_ETARGET:
    return refuse(why, PROTO_ERR_BAD_TARGET, "behaviour.target_agent",
                  "the target agent is not alive, or is the agent itself");
  case STEER_EMODEL:
    return refuse(why, PROTO_ERR_MODEL_MISMATCH, "behaviour.cornering",
                  "arc and lazy cornering need the heading model");
  default:
    return refuse(why, PROTO_ERR_BAD_FIELD, "behaviour", "the goto request is out of range");
  }
}

int steerd_goto_set(steer_planner *p, steer_world *w, steer_id id, const proto_behaviour *b,
                    steerd_goto_refusal *why) {
  steer_goto g = steerd_goto_request(b);
  if (check(w, id, &g, why) != 0)
    return -1;
  /* As for every behaviour: the agent's avoidance, wall feeler, stuck
   * detection and arrival are kept unless the GOTO's params name them
   * (PROTOCOL.md 5.2). */
  steer_behaviour nb = steer_default_behaviour(STEER_BEHAVIOUR_NONE);
  steer_agent_info was;
  if (steer_world_get(w, id, &was) == STEER_OK)
    wire_tuning_keep(&was.behaviour, &nb);
  wire_apply_behaviour(b, &nb);
  nb.kind = STEER_BEHAVIOUR_NONE;
  memset(&nb.target, 0, sizeof nb.target);
  int rc = steer_world_set_behaviour(w, id, &nb);
  if (rc != STEER_OK)
    return refuse(why, wire_error_of(rc), "behaviour", steer_strerror(rc));
  steer_planner_cancel(p, id); /* a GOTO already queued or followed starts over */
  rc = steer_planner_goto(p, w, id, &g);
  return rc == STEER_OK ? 0 : refuse(why, PROTO_ERR_INTERNAL, NULL, steer_strerror(rc));
}

void steerd_goto_spawn_desc(steer_agent_desc *desc) {
  desc->behaviour.kind = STEER_BEHAVIOUR_NONE;
  memset(&desc->behaviour.target, 0, sizeof desc->behaviour.target);
}

int steerd_goto_start(steer_planner *p, steer_world *w, steer_id id, const proto_behaviour *b,
                      steerd_goto_refusal *why) {
  steer_goto g = steerd_goto_request(b);
  if (check(w, id, &g, why) != 0)
    return -1;
  int rc = steer_planner_goto(p, w, id, &g);
  return rc == STEER_OK ? 0 : refuse(why, PROTO_ERR_INTERNAL, NULL, steer_strerror(rc));
}

void steerd_goto_report(const steer_planner *p, const steer_world *w, proto_agent_report *r) {
  steer_goto_info gi;
  r->has_goto = 0;
  if (steer_planner_get(p, r->agent, &gi) != STEER_OK)
    return;
  steer_agent_info info;
  if (steer_world_get(w, r->agent, &info) != STEER_OK)
    return;
  proto_goto_report *go = &r->go;
  memset(go, 0, sizeof *go);
  r->has_goto = 1;
  go->status = gi.status;
  go->reason = gi.reason;
  go->target_kind = gi.g.target.kind;
  go->target = wire_of_vec2(gi.g.target.point);
  go->target_agent = gi.g.target.agent;
  steer_path path;
  if (gi.status == STEER_GOTO_FOLLOWING && info.path == gi.path &&
      steer_world_path_get(w, info.path, &path) == 0 && path.count <= PROTO_MAX_ROUTE_POINTS) {
    go->partial = gi.partial;
    go->goal = wire_of_vec2(gi.goal);
    go->route_count = path.count;
    memcpy(go->route, path.points, path.count * sizeof *go->route);
  } else if (gi.status == STEER_GOTO_FOLLOWING) {
    r->has_goto = 0; /* it left its route since the last tick: out of GOTO at the next one */
    return;
  }
  if (go->status != STEER_GOTO_UNREACHABLE) {
    r->behaviour = PROTO_BEHAVIOUR_GOTO;
    go->queued = steer_planner_queue_position(p, r->agent, &go->queue_position) == STEER_OK;
  }
}

proto_event steerd_goto_event(const steer_plan_event *e) {
  proto_event out;
  out.tick = e->tick + 1u;
  out.agent = e->agent;
  if (e->type == STEER_PLAN_UNREACHABLE) {
    out.code = PROTO_EVENT_UNREACHABLE;
    out.data = e->reason;
  } else {
    out.code = e->type == STEER_PLAN_PLANNED ? PROTO_EVENT_PLANNED : PROTO_EVENT_REPLANNED;
    double cm = (double)e->length * 100.0 + 0.5;
    out.data = cm >= 4294967295.0 ? UINT32_MAX : cm > 0.0 ? (uint32_t)cm : 0u;
  }
  return out;
}
