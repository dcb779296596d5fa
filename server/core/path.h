/* path.h: path following (seed 002) with the cornering of seed 004.
 *
 * A path is a list of points and a radius. A cursor is one agent's progress along
 * it. Following is split in two so that a world can read only the previous tick's
 * state while steering:
 *   steer_path_steer_*  pure: what to do now, given the cursor;
 *   steer_path_advance  after integration: move the cursor on, report events. */
#ifndef STEER_PATH_H
#define STEER_PATH_H

#include <stdint.h>

#include "steering.h"

typedef enum steer_path_mode {
  STEER_PATH_ONCE = 0, /* stop at the last node (the last leg arrives) */
  STEER_PATH_LOOP,     /* after the last node, the first */
  STEER_PATH_PINGPONG, /* reverse at either end (patrol) */
  STEER_PATH_MODE_COUNT
} steer_path_mode;

typedef enum steer_cornering {
  STEER_CORNER_NONE = 0, /* node radius only (seed 002) */
  STEER_CORNER_ARC,      /* inscribed circle of the two legs (seed 004 s1), heading model */
  STEER_CORNER_LAZY,     /* pull back onto the current leg (seed 004 s2), heading model */
  STEER_CORNER_COUNT
} steer_cornering;

#define STEER_PATH_MAX_POINTS 1024 /* hard cap; worlds configure a smaller one */

/* A view of a path; the points belong to the caller (or the world's pool). */
typedef struct steer_path {
  const vec2 *points;
  uint32_t count;    /* >= 1 */
  float radius;      /* m, a node is reached within this distance, > 0 */
  uint8_t mode;      /* steer_path_mode */
  uint8_t cornering; /* steer_cornering */
} steer_path;

typedef struct steer_path_cursor {
  uint32_t node;        /* index of the node the agent is heading for */
  int8_t dir;           /* +1 toward the last node, -1 back (ping-pong) */
  uint8_t finished;     /* once mode: the last node has been reached (also a one-point path, any mode) */
  float turn_time_left; /* s, > 0 while an arc turn is in progress */
  float turn_rate;      /* rad/s, the arc turn's rotation */
} steer_path_cursor;

/* Events reported by steer_path_advance, as bits. */
enum {
  STEER_PATH_EVENT_WAYPOINT = 1u << 0, /* a node was reached; cursor->node is the next one */
  STEER_PATH_EVENT_REVERSED = 1u << 1, /* ping-pong turned around at an end */
  STEER_PATH_EVENT_FINISHED = 1u << 2  /* once mode reached its last node */
};

/* Start at node 0, direction +1. */
void steer_path_cursor_init(steer_path_cursor *c);

/* The node before cursor->node along the direction of travel (the start of the
 * current leg); equals cursor->node at the very start of a once or ping-pong path.
 * A loop's node 0 is entered from its last node (the closing leg). Only ping-pong
 * reads cursor->dir; once and loop always run forward. */
uint32_t steer_path_prev_node(const steer_path *path, const steer_path_cursor *c);

/* Whether a once path's follower, not finished, heads for its last node
 * (*node). */
int steer_path_final_node(const steer_path *path, const steer_path_cursor *c, uint32_t *node);

/* Dynamic model: seek the current node; arrive on the last leg of a once path;
 * brake when finished. Cornering must be NONE. */
steer_output steer_path_steer_dynamic(const steer_state *s, const steer_limits *l, const steer_params *p,
                                      const steer_path *path, const steer_path_cursor *c);

/* Kinematic model: kinematic seek / arrive toward the current node. */
steer_kinematic_output steer_path_steer_kinematic(const steer_state *s, const steer_limits *l,
                                                  const steer_params *p, const steer_path *path,
                                                  const steer_path_cursor *c);

/* Heading model, any cornering. Speed is max_speed, lowered on the last leg of a
 * once path so that the agent stops at the last node (0 once finished), and lowered
 * when the node lies inside the circle the agent turns on at max_rotation (so it
 * never orbits a node). Turn law omega = diff_angle * speed (seed 004), with the
 * gain raised to speed / d within 1 m of the node for the same reason. While an arc
 * turn runs: omega = cursor->turn_rate at the speed the turn started with. */
steer_heading_output steer_path_steer_heading(const steer_state *s, const steer_limits *l,
                                              const steer_params *p, const steer_path *path,
                                              const steer_path_cursor *c);

/* Four agents' steer_path_steer_heading, bit for bit: with SSE2 the lanes of
 * one vector (simd.h), each branch a compare and a select on the scalar
 * code's predicate. Lanes the vector path does not cover (an invalid or
 * finished path, lazy cornering, an orientation beyond 1e5 rad, an angle
 * error beyond +-9 rad, NaN, two zeros at a fminf/fmaxf) are computed by
 * steer_path_steer_heading. Returns the lanes the vector path computed (0
 * without SSE2). */
int steer_path_steer_heading_x4(const steer_state *const s[4], const steer_limits *const l[4],
                                const steer_params *const p[4], const steer_path *const path[4],
                                const steer_path_cursor *const c[4], steer_heading_output out[4]);

/* After the agent moved by dt: count down an arc turn, reach nodes (node radius,
 * or the arc trigger distance), wrap / reverse / finish. Returns event bits;
 * *reached gets the index of the node reached (when WAYPOINT is set; reached may
 * be NULL). At most one node is reached per call. An arc starts only when the
 * agent moves along the in-leg (within 30 degrees); its last tick is shortened to
 * end exactly on the out-leg's heading, assuming the next tick has the same dt. */
unsigned steer_path_advance(const steer_path *path, steer_path_cursor *c, const steer_state *s,
                            const steer_limits *l, const steer_params *p, float dt, uint32_t *reached);

#endif /* STEER_PATH_H */
