/* interp.h: steerd_interp, the client's interpolation buffer for snapshots.
 *
 * Pure: no I/O and no clock. The caller passes the local arrival time of each
 * snapshot frame (or part) and the local time of each rendered frame, in
 * microseconds of any monotonic clock (steerd_client_now_us() for example).
 *
 *   steerd_interp_push()      one snapshot frame or part: samples into each agent's ring,
 *                             one sample into the clock and jitter estimators
 *   steerd_interp_advance()   once per rendered frame: the render time, in server time
 *   steerd_interp_sample()    an agent's state at the render time
 *
 * Clock: offset = min(arrival - server_time_us) over a sliding window of
 * snapshots (the least-delayed one), so estimated server time = local - offset
 * is the server time of a snapshot that would arrive now with the minimum
 * delay. Jitter is the RFC 3550 interarrival jitter. Render time = estimated
 * server time - delay, delay = clamp(max(min_delay, k * jitter + snapshot
 * interval), max_delay); offset and delay both move towards their targets at a
 * limited rate, so the render time never jumps and never goes backwards.
 *
 * Sampling: cubic Hermite between the two samples around the render time,
 * using their velocities (linear when the velocities contradict the motion);
 * theta along the shorter arc. Past the newest sample: extrapolation with the
 * last velocity (and the last turn rate) for at most max_extrapolation_us,
 * then hold. Before the oldest sample: hold the oldest.
 *
 * Everything is sized at create; nothing allocates after that. Not thread-safe. */
#ifndef STEERD_INTERP_H
#define STEERD_INTERP_H

#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

typedef enum steerd_interp_error {
  STEERD_INTERP_OK = 0,
  STEERD_INTERP_EINVAL = -1,  /* bad argument or configuration */
  STEERD_INTERP_ENOMEM = -2,  /* create failed to allocate */
  STEERD_INTERP_ENODATA = -3, /* no snapshot yet: no clock, no render time */
  STEERD_INTERP_ENOENT = -4,  /* no such agent */
  STEERD_INTERP_EFULL = -5,   /* max_agents reached: the new agent was not added */
  STEERD_INTERP_ERROR_COUNT = 6
} steerd_interp_error;

const char *steerd_interp_strerror(int code);

typedef struct steerd_interp_config {
  uint32_t max_agents;           /* agents tracked at once (1024) */
  uint32_t samples_per_agent;    /* ring of states per agent, >= 2 (32: 1.6 s at 20 Hz) */
  uint32_t clock_window;         /* snapshots in the minimum-delay window, >= 1 (100: 5 s at 20 Hz) */
  uint32_t despawn_memory;       /* recent despawns remembered to ignore older snapshots (64) */
  uint32_t snapshot_interval_us; /* nominal spacing, 1e6 / WELCOME snapshot_rate (50000) */
  uint32_t min_delay_us;         /* render delay floor (100000) */
  uint32_t max_delay_us;         /* render delay ceiling (1000000) */
  uint32_t max_extrapolation_us; /* past the newest sample, then hold (250000) */
  double jitter_k;               /* delay target = k * jitter + snapshot interval (3.0) */
  double delay_slew_up;          /* max delay growth, us per us of local time (0.1) */
  double delay_slew_down;        /* max delay shrink, us per us of local time (0.02) */
  double offset_slew;            /* max clock offset change, us per us of local time (0.02) */
  uint32_t offset_reset_us;      /* offset error above this snaps at once: server restart (1000000) */
  double hermite_max_mismatch;   /* linear when |v0 - c| + |v1 - c| > this * max(|v0|, |v1|, |c|),
                                    c = chord velocity (3.0; a clean reversal scores 2, max is 4) */
} steerd_interp_config;

steerd_interp_config steerd_interp_default_config(void);

typedef struct steerd_interp steerd_interp;

/* NULL on a bad config or when memory is short. */
steerd_interp *steerd_interp_create(const steerd_interp_config *cfg);
/* Accepts NULL. */
void steerd_interp_destroy(steerd_interp *it);
/* Bytes allocated at create. */
size_t steerd_interp_memory_bytes(const steerd_interp *it);
/* Forgets agents, clock and statistics; keeps the configuration. */
void steerd_interp_reset(steerd_interp *it);

/* One snapshot frame, or one part of it (parts of a tick share tick and
 * server_time_us; only the first one feeds the clock). complete != 0: the
 * poses are the whole world (all parts), so known agents missing from them
 * are gone: each is removed once the render time reaches this frame.
 * Entries older than an agent's newest sample are ignored. Returns 0, or
 * EFULL when some new agents did not fit (the rest were stored). */
int steerd_interp_push(steerd_interp *it, uint64_t arrival_us, uint64_t tick, uint64_t server_time_us,
                       const proto_pose *poses, uint32_t count, int complete);

/* The DESPAWNED event of agent id at tick: removed now, and entries for it in
 * snapshots of tick <= that tick are ignored from now on. */
void steerd_interp_despawn(steerd_interp *it, proto_id id, uint64_t tick);

/* Parts the caller knows were lost (client stats frames_incomplete, say): added to stats. */
void steerd_interp_note_lost_parts(steerd_interp *it, uint64_t parts);

/* Moves the render clock to local time now_us and returns the render time in
 * server microseconds in *render_us (may be NULL). Call once per rendered
 * frame, with non-decreasing now_us. ENODATA before the first snapshot. */
int steerd_interp_advance(steerd_interp *it, uint64_t now_us, int64_t *render_us);

typedef enum steerd_interp_mode {
  STEERD_INTERP_MODE_INTERPOLATE = 0, /* between two samples */
  STEERD_INTERP_MODE_EXTRAPOLATE,     /* past the newest, within the bound */
  STEERD_INTERP_MODE_HOLD_NEWEST,     /* past the newest beyond the bound */
  STEERD_INTERP_MODE_HOLD_OLDEST,     /* before the oldest */
  STEERD_INTERP_MODE_COUNT
} steerd_interp_mode;

typedef struct steerd_interp_state {
  proto_id id;
  double x, y;   /* m */
  double theta;  /* rad, (-pi, pi] */
  double vx, vy; /* m/s */
  steerd_interp_mode mode;
  int64_t age_us; /* render time - server time of the newest sample used (<0: interpolating) */
} steerd_interp_state;

/* Agent id at the render time of the last advance. */
int steerd_interp_sample(steerd_interp *it, proto_id id, steerd_interp_state *out);
/* Agent id at server time t_us; does not touch the statistics. */
int steerd_interp_sample_at(const steerd_interp *it, proto_id id, int64_t t_us, steerd_interp_state *out);

/* Agents tracked now, and the id of the i-th (0 <= i < count), for iterating. */
uint32_t steerd_interp_count(const steerd_interp *it);
proto_id steerd_interp_id_at(const steerd_interp *it, uint32_t i);

typedef struct steerd_interp_stats {
  uint64_t frames;          /* distinct snapshot ticks pushed */
  uint64_t frames_expected; /* by the schedule: from the first to the newest frame */
  uint64_t frames_missed;   /* expected - received, never negative */
  uint64_t parts_lost;      /* from steerd_interp_note_lost_parts */
  uint64_t stale_entries;   /* entries older than the agent's newest sample, or despawned */
  uint64_t agents_full;     /* new agents refused: max_agents */
  uint64_t agents_added, agents_removed;
  double jitter_ms; /* RFC 3550 interarrival jitter */
  double offset_ms; /* local - server clock, incl. the minimum one-way delay */
  double delay_ms;  /* current render delay */
  double delay_target_ms;
  double age_ms;      /* at the last advance: estimated server now - newest frame */
  double age_mean_ms; /* over all advances */
  double age_max_ms;
  double margin_ms; /* newest frame - render time at the last advance (<0: underrun) */
  uint64_t advances;
  uint64_t underruns;                         /* advances that went from buffered to past the newest frame */
  uint64_t underrun_advances;                 /* advances past the newest frame */
  double underrun_ms;                         /* local time spent past the newest frame */
  uint64_t samples[STEERD_INTERP_MODE_COUNT]; /* steerd_interp_sample calls by result mode */
  double extrapolated_ms;                     /* sum of the extrapolation times of those samples */
} steerd_interp_stats;

void steerd_interp_get_stats(const steerd_interp *it, steerd_interp_stats *out);

#endif /* STEERD_INTERP_H */
