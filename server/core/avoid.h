/* avoid.h: predictive avoidance of other agents and of the map's geometry, as
 * pure functions (the world gathers neighbours and applies the results).
 *
 * Agents: time-to-collision forces (Karamouzas, Skinner and Guy, "Universal
 * power law governing pedestrian interactions", 2014, in the bounded form of
 * their course notes). For each neighbour the time tau until the two bodies
 * would touch at the current velocities is solved exactly (a quadratic); a
 * neighbour that would be touched within the horizon pushes along the
 * direction from its predicted position to ours at tau, with a strength
 * falling from max_acceleration at tau = 0 to 0 at the horizon. We chose this
 * over ORCA because the core's agents are steered by accelerations that blend
 * and prioritise with the other behaviours: a force adds to them, whereas ORCA
 * replaces the velocity with an LP solution per agent (three times the cost
 * per neighbour in RVO2) that then has to be turned back into an
 * acceleration. Reciprocity comes from symmetry: both agents of a pair compute
 * the same tau and opposite directions, each taking a share of the work
 * (priorities shift the shares). A head-on pair, whose predicted directions
 * are exactly opposed to the motion, would only brake; every agent therefore
 * adds a sideways term toward the right of its relative velocity, so both
 * pass on their right (as pedestrians do in much of the world) and never
 * mirror each other into a deadlock.
 *
 * Geometry: a feeler, the body widened by a margin swept along the desired
 * velocity for lookahead seconds. When it meets a surface the desired
 * velocity is turned along the surface (the side the velocity already leans
 * to; to the right when it meets it square on), more the closer the contact,
 * and a second feeler along the turned velocity removes what would still go
 * into a second surface, so a corner brings the agent to rest instead of
 * making it swing from one wall to the other. */
#ifndef STEER_AVOID_H
#define STEER_AVOID_H

#include "map.h"
#include "vec2.h"

#define STEER_AVOID_MAX 32 /* neighbours per call */

/* Neighbours as arrays per field (the layout the SSE path loads). Room for
 * STEER_AVOID_MAX + 3 entries: the caller may leave the arrays unpadded, the
 * function pads a copy of count up to a multiple of 4 itself. */
typedef struct steer_avoid_set {
  float px[STEER_AVOID_MAX + 4], py[STEER_AVOID_MAX + 4]; /* m */
  float vx[STEER_AVOID_MAX + 4], vy[STEER_AVOID_MAX + 4]; /* m/s */
  float r[STEER_AVOID_MAX + 4];                           /* m, body radius */
  float share[STEER_AVOID_MAX + 4]; /* this agent's part of the pair's avoidance, 0..2 (1: equal) */
  float tie[STEER_AVOID_MAX + 4];   /* +1 or -1: the side to push to when the two bodies coincide */
  int count;
} steer_avoid_set;

/* Acceleration (clipped to max_acc) that steers a body at p with velocity v and
 * radius r away from the predicted collisions within horizon seconds.
 * Touching bodies push apart at max_acc * share * (1 + 3 depth / R). Pads the
 * set (entries count.. up to a multiple of 4). */
vec2 steer_avoid_agents(vec2 p, vec2 v, float r, float max_acc, float horizon, steer_avoid_set *n);

/* How much of a pair's avoidance an agent of priority own takes against one of
 * priority other (0..2, 1 when equal); other_avoids 0: all of it (2). */
float steer_avoid_share(uint8_t own, uint8_t other, int other_avoids);

/* Keeping right in a counterflow: the wanted velocity want of a body of
 * radius r at p, turned toward its right by the oncoming traffic in its
 * corridor ahead (neighbours of n within LANE_RANGE ahead, moving toward it,
 * not clear to either side), weighted by how near they are: the flows of a
 * door or a corridor split into a lane each way before anyone meets head on
 * (the time-to-collision side term acts only when a collision is predicted,
 * which in a crowd is too late and, with a long horizon, makes both flows
 * brake and freeze). A neighbour pressing against it from ahead counts too,
 * whatever its velocity: in a jam nobody moves, and everyone sliding to
 * their own right is what unpicks two facing crowds. Each neighbour counts by
 * its share (a bully keeps its line). Clipped to max_speed; unchanged with no
 * oncoming traffic. Pads the set like steer_avoid_agents. */
vec2 steer_avoid_lane(vec2 p, vec2 want, float r, float max_speed, steer_avoid_set *n);

/* The desired velocity v_des of a body of radius r at p, turned away from the
 * geometry within lookahead seconds (margin m of clearance). Unchanged when
 * the way is clear or lookahead is 0. */
vec2 steer_avoid_walls(const steer_map *m, vec2 p, float r, vec2 v_des, float lookahead, float margin);

#endif /* STEER_AVOID_H */
