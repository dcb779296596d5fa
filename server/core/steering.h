/* steering.h: the movement models and behaviours of the seeds, as pure functions.
 *
 * Every function here reads an agent's state, limits and parameters (and, for
 * pursue and friends, another agent's state) and returns what the agent should do;
 * nothing here touches a world, a clock or the heap. Integration is separate
 * (steer_integrate_*), so a world can compute every agent's steering from the
 * previous tick's state before it moves anyone.
 *
 * Three movement models (docs/behaviours.md):
 *   kinematic: behaviours output a velocity; the agent faces where it moves.
 *   dynamic:   behaviours output accelerations (steer_output); semi-implicit Euler.
 *   heading:   the agent moves along heading(theta); behaviours output a turn rate
 *              and a desired speed (seed 004, used with path cornering). */
#ifndef STEER_STEERING_H
#define STEER_STEERING_H

#include "rng.h"
#include "vec2.h"

/* The state every model shares. */
typedef struct steer_state {
  vec2 position;     /* m */
  float orientation; /* rad, (-pi, pi], heading = (cos, sin) */
  vec2 velocity;     /* m/s */
  float rotation;    /* rad/s, counter-clockwise positive */
} steer_state;

typedef struct steer_limits {
  float max_speed;                /* m/s, > 0 */
  float max_acceleration;         /* m/s^2, > 0 */
  float max_rotation;             /* rad/s, > 0 */
  float max_angular_acceleration; /* rad/s^2, > 0 */
  float radius;                   /* m, body radius (separation, interest) */
} steer_limits;

/* Tunables of the behaviours; steer_default_params() documents the defaults. */
typedef struct steer_params {
  float time_to_target;           /* s, dynamic seek/arrive/velocity match (0.1) */
  float target_radius;            /* m, arrive: inside it the agent is arrived (0.5) */
  float slow_radius;              /* m, arrive: the ramp; 0 brakes on max_acceleration (0) */
  float kinematic_time_to_target; /* s, kinematic arrive (0.25) */
  float align_target_radius;      /* rad, align dead band (0.02) */
  float align_slow_radius;        /* rad, align starts slowing its turn (0.6) */
  float align_time_to_target;     /* s, align (0.1) */
  float max_prediction;           /* s, cap of pursue/evade look-ahead; 0 = none (2) */
  float panic_radius;             /* m, flee/evade ignore targets further away; 0 = always (0) */
  float wander_offset;            /* m, centre of the wander circle ahead of the agent (4) */
  float wander_radius;            /* m, radius of the wander circle (2) */
  float wander_rate;              /* rad/s, max drift of the wander target (4) */
  float separation_radius;        /* m, neighbours closer than this push away (2) */
  float turn_trigger_distance;    /* m, arc cornering starts this far from a corner (5) */
  float path_recover_strength;    /* 1, lazy cornering pull back onto the leg (1) */
} steer_params;

/* Accelerations requested by a dynamic behaviour. */
typedef struct steer_output {
  vec2 linear;   /* m/s^2 */
  float angular; /* rad/s^2 */
} steer_output;

/* Velocity requested by a kinematic behaviour. */
typedef struct steer_kinematic_output {
  vec2 velocity;  /* m/s */
  float rotation; /* rad/s */
} steer_kinematic_output;

/* What a heading-driven behaviour asks for. */
typedef struct steer_heading_output {
  float rotation; /* rad/s, clipped to max_rotation */
  float speed;    /* m/s, desired forward speed, in [0, max_speed] */
} steer_heading_output;

steer_params steer_default_params(void);
steer_limits steer_default_limits(void);

/* Kinematic behaviours (seed 003, seed 000). */
steer_kinematic_output steer_kinematic_seek(const steer_state *s, const steer_limits *l, vec2 target);
steer_kinematic_output steer_kinematic_flee(const steer_state *s, const steer_limits *l, vec2 target);
/* Zero velocity inside params->target_radius. */
steer_kinematic_output steer_kinematic_arrive(const steer_state *s, const steer_limits *l,
                                              const steer_params *p, vec2 target);
steer_kinematic_output steer_kinematic_wander(const steer_state *s, const steer_limits *l, steer_rng *rng);

/* Dynamic behaviours (seed 000 Millington, seed 001 Buckland). Every output is
 * clipped to max_acceleration / max_angular_acceleration. The controllers close
 * the gap to what they want in time_to_target (align_time_to_target), so the tick
 * dt must not exceed those (0.1 s by default), or they overshoot their aim. */
steer_output steer_seek(const steer_state *s, const steer_limits *l, const steer_params *p, vec2 target);
/* Nothing outside panic_radius (when > 0); a coincident target is fled along the
 * agent's heading. */
steer_output steer_flee(const steer_state *s, const steer_limits *l, const steer_params *p, vec2 target);
/* Brakes to rest inside target_radius; never asks for more speed than it can shed
 * before the target, so it does not overshoot whatever slow_radius is. The speed
 * asked for at distance d is the least of max_speed, a braking curve and d / (4 *
 * time_to_target) (critically damped near the target). The curve: with
 * slow_radius 0 (the default), braking at 0.9 of max_acceleration from
 * v^2 / (2 * 0.9 * max_acceleration), allowing for the controller's lag; with
 * slow_radius > 0, Millington's max_speed * d / slow_radius capped by
 * sqrt(max_acceleration * d) (half the limit, the rest is headroom for the lag). */
steer_output steer_arrive(const steer_state *s, const steer_limits *l, const steer_params *p, vec2 target);
/* Angular only; the error is wrapped, so turns take the short way. Same speed caps
 * as arrive in angle space; brakes the rotation inside the dead band
 * (align_target_radius), so it does not oscillate. */
steer_output steer_align(const steer_state *s, const steer_limits *l, const steer_params *p,
                         float target_orientation);
steer_output steer_velocity_match(const steer_state *s, const steer_limits *l, const steer_params *p,
                                  vec2 target_velocity);
/* Align toward target; no steering (a rotation brake) when target == position. */
steer_output steer_face(const steer_state *s, const steer_limits *l, const steer_params *p, vec2 target);
steer_output steer_look_where_going(const steer_state *s, const steer_limits *l, const steer_params *p);
/* Seek the target's predicted position; seeks its position when it is ahead and
 * the two face each other head on (seed 001; headings from orientations).
 * Look-ahead = distance / (max_speed + target speed), capped by max_prediction
 * (0 predicts nothing). */
steer_output steer_pursue(const steer_state *s, const steer_limits *l, const steer_params *p,
                          const steer_state *target);
/* Flee the pursuer's predicted position (pursue's look-ahead); nothing while the
 * pursuer is outside panic_radius (when > 0). */
steer_output steer_evade(const steer_state *s, const steer_limits *l, const steer_params *p,
                         const steer_state *pursuer);
/* Arrive at the midpoint of a and b, predicted by the time it takes to get there
 * (seed 001). The pair's mean velocity is fed forward and the agent keeps pace
 * once within target_radius of the midpoint, so it does not trail a moving pair. */
steer_output steer_interpose(const steer_state *s, const steer_limits *l, const steer_params *p,
                             const steer_state *a, const steer_state *b);
/* Millington's wander; *wander_orientation is the agent's wander state (rad,
 * relative to its orientation). dt scales wander_rate. */
steer_output steer_wander(const steer_state *s, const steer_limits *l, const steer_params *p,
                          float *wander_orientation, steer_rng *rng, float dt);
/* Push away from neighbours closer than R = separation_radius + both radii, with
 * strength max_acceleration * (R - d) / R; the sum is clipped. neighbour_radius
 * may be NULL (all the agent's own radius). A coincident neighbour pushes along
 * -heading(orientation): deterministic, but two identical agents need the
 * caller to break the tie. */
steer_output steer_separation(const steer_state *s, const steer_limits *l, const steer_params *p,
                              const vec2 *neighbours, const float *neighbour_radius, int count);
/* Slows the agent to rest and stops its rotation. */
steer_output steer_brake(const steer_state *s, const steer_limits *l, const steer_params *p);

/* Combining (Millington 3.4). Blend: weighted sum (weights may be NULL: all 1),
 * then clipped. Priority: the first output whose linear or angular magnitude
 * exceeds epsilon; else zero. */
steer_output steer_blend(const steer_output *outputs, const float *weights, int count, const steer_limits *l);
steer_output steer_priority(const steer_output *outputs, int count, float epsilon);

/* Heading-driven steering toward a point: omega = diff_angle * speed (seed 004),
 * diff_angle wrapped, clipped to max_rotation; 0 at the point itself. */
float steer_heading_turn_toward(const steer_state *s, const steer_limits *l, float speed, vec2 target);

/* Integrators. Each wraps orientation into (-pi, pi], keeps |velocity| <=
 * max_speed and |rotation| <= max_rotation, and does nothing unless dt > 0.
 * Kinematic: stores the (clipped) output as velocity and rotation, p += v dt,
 * then theta += rotation dt, or theta = atan2(v) when rotation is 0 and v is not.
 * Dynamic: semi-implicit Euler (docs/behaviours.md); it clips the accelerations too. */
void steer_integrate_kinematic(steer_state *s, const steer_limits *l, steer_kinematic_output o, float dt);
void steer_integrate_dynamic(steer_state *s, const steer_limits *l, steer_output o, float dt);
/* speed changes toward o.speed by at most max_acceleration*dt; theta turns first,
 * then p moves along the new heading and v = speed * heading. */
void steer_integrate_heading(steer_state *s, const steer_limits *l, steer_heading_output o, float dt);

/* Four agents' arrive toward a point (steer_arrive's linear part) with
 * look-where-you're-going for the angular part (steer_look_where_going), in
 * one pass: out[i] is {steer_arrive(s[i], ..., target[i]).linear,
 * steer_look_where_going(s[i], ...).angular}, bit for bit. With SSE2 the four
 * run as the lanes of one vector (simd.h); a lane that leaves the vector path's
 * exact range (an angle error outside (-pi, pi], a length whose square
 * overflows) is redone by the scalar functions. Returns the number of lanes
 * the vector path computed (0..4; 0 without SSE2). */
int steer_arrive_look_x4(const steer_state *const s[4], const steer_limits *const l[4],
                         const steer_params *const p[4], const vec2 target[4], steer_output out[4]);

/* Four agents' steer_wander, bit for bit (wander angles and generators
 * advanced as four calls would), the same way: lanes outside the vector
 * path's exact range (an orientation beyond 1e5 rad, NaN) are redone by
 * steer_wander from their saved generator. Returns the lanes the vector path
 * computed (0 without SSE2). */
int steer_wander_x4(const steer_state *const s[4], const steer_limits *const l[4],
                    const steer_params *const p[4], float *const wander_orientation[4],
                    steer_rng *const rng[4], float dt, steer_output out[4]);

/* Four agents' steer_integrate_dynamic / steer_integrate_heading, bit for bit,
 * the same way (simd.h): lanes outside the vector path's exact range (an
 * orientation step beyond +-9 rad, NaN, a length whose square overflows, two
 * zeros at a fminf/fmaxf, an orientation beyond 1e5 rad) are integrated by the
 * scalar function. s[i] must be four different states. Returns the lanes the
 * vector path computed (0 without SSE2, or when dt is not > 0). */
int steer_integrate_dynamic_x4(steer_state *const s[4], const steer_limits *const l[4],
                               const steer_output o[4], float dt);
int steer_integrate_heading_x4(steer_state *const s[4], const steer_limits *const l[4],
                               const steer_heading_output o[4], float dt);

#endif /* STEER_STEERING_H */
