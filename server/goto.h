/* goto.h: GOTO in the server: the planner of server/core/planner.h
 * served in every tick, its results as events, its state in checkpoints.
 *
 * The tick (server.c run_tick) is: steerd_goto_before_step (replans the map
 * changes and moved targets call for, then serves the plan queue within
 * --plan-budget A* expansions: a burst of GOTO commands is absorbed over
 * several ticks, first come first served), the world's step, then
 * steerd_goto_after_step (STUCK and the end of a partial route queue replans).
 * Everything runs on the loop thread in tick order, so the same commands give
 * the same routes, events and state hash.
 *
 * A command that gives an agent another behaviour, a path or a STOP, or that
 * despawns it, takes it out of GOTO at once (steerd_goto_forget): a request
 * still queued for it is dropped, not served over the new behaviour. */
#ifndef STEERD_GOTO_H
#define STEERD_GOTO_H

#include <stddef.h>
#include <stdint.h>

#include "persist.h"
#include "planner.h"
#include "protocol.h"
#include "world.h"

/* The planner of world w with a budget of A* expansions per tick and a
 * radius class's build delay in ticks (0: the planner's, by the map's size);
 * NULL on no memory. */
steer_planner *steerd_goto_create(const steer_world *w, uint32_t budget, uint32_t build_delay, int nav);

/* Starts the builds of the navigation graphs of the radius classes in use
 * (every live agent's: steer_planner_warm_start) on threads of their own,
 * logged, so no tick builds one and the loop goes on meanwhile: the host
 * calls it once the world, its map and the planner's state are in place
 * (start-up, restore, map file) and it listens. The classes get due ticks as
 * a late class does (a restored state keeps its own). Returns the builds
 * started (steer_planner_warming tells when they are done). On no memory it
 * warns and the first plan of a class builds it, as without this. */
uint32_t steerd_goto_warm(steer_planner *p, const steer_world *w);

/* The planner part of a restored state file (st->planner, if any) into p.
 * 0, or the steer error of steer_planner_load. */
int steerd_goto_restore(steer_planner *p, const steerd_persist_server *st);

/* The planner's state for a checkpoint into *buf (grown as needed, owned by
 * the caller, freed with free()); st->planner / planner_len point at it, or
 * are empty when no agent is in GOTO and nothing waits (a version 2 file).
 * 0, or STEER_ENOMEM. */
int steerd_goto_save(const steer_planner *p, uint8_t **buf, size_t *cap, steerd_persist_server *st);

/* ---- commands (PROTOCOL.md 5.3, 6.2, 6.4, 6.8) ---------------------------------- */

/* Why a GOTO command is refused: the wire error (PROTO_ERR_*), its field and message. */
typedef struct steerd_goto_refusal {
  int code;
  const char *field;
  const char *message;
} steerd_goto_refusal;

/* The request a decoded behaviour of kind goto makes (defaults for what it omits). */
steer_goto steerd_goto_request(const proto_behaviour *b);

/* SET_BEHAVIOUR with kind goto (after the range checks of validate.h): the
 * target and model are checked, then the behaviour's facing, combine,
 * separation and params are set with kind none (the agent comes to rest until
 * its route is served, normally in the next tick), then the request is
 * queued. 0, or -1 with *why (nothing changed). */
int steerd_goto_set(steer_planner *p, steer_world *w, steer_id id, const proto_behaviour *b,
                    steerd_goto_refusal *why);

/* SPAWN with a goto behaviour: before the spawn, desc (from wire_apply_spawn)
 * gets kind none and no target; after it, steerd_goto_start queues the request
 * (0), or refuses it (-1 with *why; the caller despawns the agent). */
void steerd_goto_spawn_desc(steer_agent_desc *desc);
int steerd_goto_start(steer_planner *p, steer_world *w, steer_id id, const proto_behaviour *b,
                      steerd_goto_refusal *why);

/* QUERY: r (filled from the world) learns the agent's GOTO state: has_goto
 * and go, and behaviour PROTO_BEHAVIOUR_GOTO while it waits for or follows a
 * route. Nothing changes for an agent that never was in GOTO. */
void steerd_goto_report(const steer_planner *p, const steer_world *w, proto_agent_report *r);

/* A planner event as the wire's EVENT: PLANNED / REPLANNED with the route's
 * length in cm, UNREACHABLE with the reason; tick: the tick whose step first
 * follows the result (the plan is served at the start of that tick). */
proto_event steerd_goto_event(const steer_plan_event *e);

/* An admin changed the map (server_commands.c map_changed: ADD_OBSTACLE, REMOVE_OBSTACLE,
 * steerd_server_map_edit): routes across the change are queued for replanning
 * at once, ahead of GOTOs that come after it; served at the next tick. */
void steerd_goto_map_changed(steer_planner *p, const steer_world *w);

/* The agent left GOTO by another command (no-op when it was not in GOTO). */
void steerd_goto_forget(steer_planner *p, steer_id id);

/* Before the world's step: replans queued by triggers, then the queue served
 * within the budget. Its events: steer_planner_events(). */
void steerd_goto_before_step(steer_planner *p, steer_world *w);
/* After the step: the step's STUCK and PATH_FINISHED events queue replans. */
void steerd_goto_after_step(steer_planner *p, const steer_world *w);

#endif /* STEERD_GOTO_H */
