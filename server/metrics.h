/* metrics.h: the server's counters in the Prometheus text exposition format
 * (version 0.0.4), for GET /metrics. Names follow Prometheus conventions: the
 * steerd_ prefix, base units (seconds, bytes), _total on counters, no labels per
 * client. Pure: the caller gathers the numbers, this only formats them. */
#ifndef STEERD_METRICS_H
#define STEERD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "server.h"

typedef struct steerd_metrics_input {
  steerd_server_stats stats;
  uint32_t agents, agents_max;
  uint32_t clients_by_role[STEERD_ROLE_COUNT + 1]; /* the last: not WELCOMEd yet */
  uint64_t delta_frames, delta_frames_without_baseline;
  steerd_checkpoint_stats checkpoints;                   /* server/checkpoint.h */
  double start_time_unix_s;                              /* process start, wall clock */
  double now_unix_s;                                     /* now, wall clock */
  int ready;                                             /* what /readyz answers */
  uint32_t views;                                        /* live views open */
  uint64_t view_frames, view_frames_skipped, view_bytes; /* live view snapshots */
  uint64_t http_requests;                                /* HTTP requests answered */
  uint32_t http_connections;                             /* HTTP connections open */
  uint64_t http_refused_full, http_refused_address; /* answered 503: every slot taken, or the address's */
  steer_planner_stats plan;                         /* GOTO's planner (planner.h) */
  uint32_t plan_agents;                             /* agents in GOTO */
  uint64_t plan_builds, plan_loop_builds;           /* full graph builds, and those on the loop thread */
  const char *version;                              /* build version */
  /* The loop's most work in one tick's period among the last STEERD_TICK_LOG
   * (steerd_server_tick_log), by phase; ticks_in_window: how many there were. */
  uint32_t tick_work_max_us[STEERD_LOOP_PHASES];
  uint32_t ticks_in_window;
} steerd_metrics_input;

/* Writes the exposition into buf; returns its length, or 0 if cap is too small
 * (STEERD_METRICS_MAX_BYTES always suffices). */
#define STEERD_METRICS_MAX_BYTES 32768
size_t steerd_metrics_render(char *buf, size_t cap, const steerd_metrics_input *in);

#endif /* STEERD_METRICS_H */
