/* metrics.c: see metrics.h. */
#include "metrics.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "protocol.h"

const double steerd_tick_bucket_bounds[STEERD_TICK_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                               0.01,   0.025,   0.05,   0.1,   0.25,   1.0};

typedef struct out {
  char *buf;
  size_t cap, len;
  int overflowed;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...) {
  if (o->overflowed)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= o->cap - o->len) {
    o->overflowed = 1;
    return;
  }
  o->len += (size_t)n;
}

static void family(out *o, const char *name, const char *type, const char *help) {
  put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(out *o, const char *name, const char *help, uint64_t v) {
  family(o, name, "counter", help);
  put(o, "%s %llu\n", name, (unsigned long long)v);
}

/* A counter of seconds. */
static void counter_s(out *o, const char *name, const char *help, uint64_t ns) {
  family(o, name, "counter", help);
  put(o, "%s %.9f\n", name, (double)ns / 1e9);
}

static void gauge(out *o, const char *name, const char *help, double v) {
  family(o, name, "gauge", help);
  put(o, "%s %.17g\n", name, v);
}

/* "BAD_FIELD" -> "bad_field": label values in the style of the rest. */
static const char *lower(const char *s, char *buf, size_t cap) {
  size_t i = 0;
  for (; s[i] && i + 1 < cap; i++)
    buf[i] = (char)tolower((unsigned char)s[i]);
  buf[i] = '\0';
  return buf;
}

/* A histogram over the tick buckets (steerd_tick_bucket_bounds) of `count`
 * observations summing to sum_ns. */
static void tick_buckets(out *o, const char *name, const char *help, const uint64_t *bucket, uint64_t count,
                         uint64_t sum_ns) {
  family(o, name, "histogram", help);
  for (int b = 0; b < STEERD_TICK_BUCKETS; b++)
    put(o, "%s_bucket{le=\"%g\"} %llu\n", name, steerd_tick_bucket_bounds[b], (unsigned long long)bucket[b]);
  put(o, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)count);
  put(o, "%s_sum %.9f\n", name, (double)sum_ns / 1e9);
  put(o, "%s_count %llu\n", name, (unsigned long long)count);
}

static void tick_histogram(out *o, const steerd_server_stats *st) {
  tick_buckets(o, "steerd_tick_duration_seconds", "Time one world step took.", st->tick_seconds_bucket,
               st->ticks, st->step_ns_total);
  gauge(o, "steerd_tick_duration_max_seconds", "The longest world step since the start.",
        (double)st->step_ns_max / 1e9);
}

const char *steerd_loop_phase_name(int phase) {
  static const char *const names[STEERD_LOOP_PHASES] = {"step", "commands",   "enet",
                                                        "send", "checkpoint", "http"};
  return phase >= 0 && phase < STEERD_LOOP_PHASES ? names[phase] : "unknown";
}

static void loop_phases(out *o, const steerd_server_stats *st) {
  family(o, "steerd_loop_seconds_total", "counter", "The loop thread's time, by what it was doing.");
  for (int p = 0; p < STEERD_LOOP_PHASES; p++)
    put(o, "steerd_loop_seconds_total{phase=\"%s\"} %.9f\n", steerd_loop_phase_name(p),
        (double)st->loop_phase_ns[p] / 1e9);
  family(o, "steerd_tick_overruns_by_cause_total", "counter",
         "Overruns, each charged to the phase that took most of the loop since the tick before it.");
  for (int p = 0; p < STEERD_LOOP_PHASES; p++)
    put(o, "steerd_tick_overruns_by_cause_total{cause=\"%s\"} %llu\n", steerd_loop_phase_name(p),
        (unsigned long long)st->overruns_by_phase[p]);
  tick_buckets(o, "steerd_tick_lateness_seconds", "How long after its slot in the schedule a tick began.",
               st->tick_late_bucket, st->ticks, st->tick_late_ns_total);
}

/* The worst tick of the last few seconds, which a scrape every 15 s would
 * otherwise only see averaged into the counters above. */
static void worst_tick(out *o, const steerd_metrics_input *in) {
  uint64_t total = 0;
  for (int p = 0; p < STEERD_LOOP_PHASES; p++)
    total += in->tick_work_max_us[p];
  gauge(o, "steerd_tick_work_max_seconds",
        "The loop's most work in one tick's period (from one step to the next) among the last "
        "steerd_tick_window_ticks.",
        (double)total / 1e6);
  family(o, "steerd_tick_work_max_phase_seconds", "gauge", "That period's work by phase.");
  for (int p = 0; p < STEERD_LOOP_PHASES; p++)
    put(o, "steerd_tick_work_max_phase_seconds{phase=\"%s\"} %.6f\n", steerd_loop_phase_name(p),
        (double)in->tick_work_max_us[p] / 1e6);
  gauge(o, "steerd_tick_window_ticks",
        "Tick periods the worst one is taken from (the last 512: 17 s at 30 Hz).", in->ticks_in_window);
}

static void commands(out *o, const steerd_server_stats *st) {
  char name[32];
  family(o, "steerd_commands_total", "counter",
         "Commands decoded, by type and result (error: answered with an ERROR).");
  for (uint32_t t = 1; t <= PROTO_MSG_LAST_COMMAND; t++) {
    const char *tn = proto_msg_type_name(t);
    if (!tn || !PROTO_MSG_IS_COMMAND(t))
      continue;
    lower(tn, name, sizeof name);
    put(o, "steerd_commands_total{type=\"%s\",result=\"ok\"} %llu\n", name,
        (unsigned long long)st->commands_by_type[t][0]);
    put(o, "steerd_commands_total{type=\"%s\",result=\"error\"} %llu\n", name,
        (unsigned long long)st->commands_by_type[t][1]);
  }
  family(o, "steerd_errors_sent_total", "counter", "ERROR messages sent to clients, by wire code.");
  for (int c = 1; c < PROTO_ERR_COUNT; c++)
    put(o, "steerd_errors_sent_total{code=\"%s\"} %llu\n", lower(proto_error_name(c), name, sizeof name),
        (unsigned long long)st->errors_by_code[c]);
}

static void clients(out *o, const steerd_metrics_input *in) {
  family(o, "steerd_clients", "gauge", "Connected clients by role (pending: not WELCOMEd yet).");
  for (int r = 0; r <= STEERD_ROLE_COUNT; r++)
    put(o, "steerd_clients{role=\"%s\"} %u\n", r < STEERD_ROLE_COUNT ? steerd_role_name(r) : "pending",
        in->clients_by_role[r]);
}

static void snapshots(out *o, const steerd_metrics_input *in) {
  const steerd_server_stats *st = &in->stats;
  counter(o, "steerd_snapshots_total", "Snapshot rounds sent (each to every client, in one or more packets).",
          st->snapshots);
  uint64_t full_packets = st->snapshot_packets - st->delta_packets;
  uint64_t full_bytes = st->snapshot_bytes - st->delta_bytes;
  family(o, "steerd_snapshot_packets_sent_total", "counter",
         "SNAPSHOT (full) and DELTA packets sent on channel 1, per copy.");
  put(o, "steerd_snapshot_packets_sent_total{kind=\"full\"} %llu\n", (unsigned long long)full_packets);
  put(o, "steerd_snapshot_packets_sent_total{kind=\"delta\"} %llu\n", (unsigned long long)st->delta_packets);
  family(o, "steerd_snapshot_sent_bytes_total", "counter",
         "Payload bytes of SNAPSHOT (full) and DELTA packets sent, per copy.");
  put(o, "steerd_snapshot_sent_bytes_total{kind=\"full\"} %llu\n", (unsigned long long)full_bytes);
  put(o, "steerd_snapshot_sent_bytes_total{kind=\"delta\"} %llu\n", (unsigned long long)st->delta_bytes);
  counter(o, "steerd_delta_frames_total", "DELTA frames encoded, one per delta client per snapshot.",
          in->delta_frames);
  counter(o, "steerd_delta_frames_without_baseline_total",
          "DELTA frames sent against no acknowledged baseline (every agent absolute).",
          in->delta_frames_without_baseline);
  counter_s(o, "steerd_delta_snapshot_seconds_total",
            "Loop thread's time choosing, encoding (on --threads) and sending the DELTA frames of snapshots.",
            st->delta_ns_total);
  family(o, "steerd_snapshots_deferred_total", "counter",
         "Snapshots not sent to a client in a round, to be sent in a later one: by kind and by the budget "
         "that deferred them (client: its own --full-rate-kbps; server: --send-budget-kbps and "
         "--send-budget-us, shared by all clients).");
  put(o, "steerd_snapshots_deferred_total{kind=\"full\",budget=\"client\"} %llu\n",
      (unsigned long long)st->full_deferred);
  put(o, "steerd_snapshots_deferred_total{kind=\"full\",budget=\"server\"} %llu\n",
      (unsigned long long)st->full_budget_deferred);
  put(o, "steerd_snapshots_deferred_total{kind=\"delta\",budget=\"server\"} %llu\n",
      (unsigned long long)st->delta_budget_deferred);
  counter(o, "steerd_send_rounds_limited_total",
          "Snapshot rounds in which the server-wide send budget left some clients for a later round.",
          st->send_rounds_limited);
  counter(o, "steerd_events_lost_total",
          "Events not sent to clients that were behind (counted to them in EVENTS' lost).", st->events_lost);
}

static void planner(out *o, const steerd_metrics_input *in) {
  const steer_planner_stats *pl = &in->plan;
  gauge(o, "steerd_plan_queue_length", "GOTO plan requests waiting in the plan queue.", pl->queued);
  gauge(o, "steerd_plan_agents", "Agents in GOTO: waiting for a route, following one, or unreachable.",
        in->plan_agents);
  family(
      o, "steerd_plans_total", "counter",
      "GOTO plans served, by outcome (the event sent; kept: a replan found the route followed, no event).");
  put(o, "steerd_plans_total{outcome=\"planned\"} %llu\n", (unsigned long long)pl->planned);
  put(o, "steerd_plans_total{outcome=\"replanned\"} %llu\n", (unsigned long long)pl->replanned);
  put(o, "steerd_plans_total{outcome=\"kept\"} %llu\n", (unsigned long long)pl->kept);
  put(o, "steerd_plans_total{outcome=\"unreachable\"} %llu\n", (unsigned long long)pl->unreachable);
  family(o, "steerd_plan_duration_seconds", "histogram", "Time one GOTO plan took on the loop thread.");
  uint64_t below = 0;
  for (int b = 0; b < STEER_PLANNER_TIME_BUCKETS; b++) {
    below += pl->plan_time_bucket[b];
    put(o, "steerd_plan_duration_seconds_bucket{le=\"%g\"} %llu\n", steer_planner_time_bounds[b],
        (unsigned long long)below);
  }
  put(o, "steerd_plan_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)pl->plans);
  put(o, "steerd_plan_duration_seconds_sum %.9f\n", (double)pl->plan_ns / 1e9);
  put(o, "steerd_plan_duration_seconds_count %llu\n", (unsigned long long)pl->plans);
  counter(o, "steerd_plan_graph_builds_total", "Full navigation graph builds (a radius class's first graph).",
          in->plan_builds);
  counter(o, "steerd_plan_graph_loop_builds_total",
          "Of the full navigation graph builds, those made on the loop thread (no thread could start).",
          in->plan_loop_builds);
  gauge(o, "steerd_plan_landmark_classes",
        "Navigation mesh radius classes whose plans use landmarks (computed off the loop once a mesh is "
        "served).",
        pl->landmark_classes);
  counter(o, "steerd_plan_waits_total",
          "Ticks that waited for a navigation graph build (or landmarks) still running at its due tick.",
          pl->waits);
  counter_s(o, "steerd_plan_wait_seconds_total", "Time ticks spent waiting for navigation graph builds.",
            pl->wait_ns);
  counter(o, "steerd_plan_wait_answered_total",
          "PINGs and HELLOs answered while a tick waited for a navigation graph.", in->stats.wait_answered);
  counter(o, "steerd_plan_wait_kept_packets_total",
          "Packets received while a tick waited for a navigation graph, handled after the tick.",
          in->stats.wait_kept);
}

static void command_queue(out *o, const steerd_server_stats *st) {
  gauge(o, "steerd_commands_queued", "Commands received and waiting to run, all clients.",
        (double)st->commands_queued);
  counter(o, "steerd_commands_run_total", "Commands taken from the clients' inboxes and run.",
          st->commands_run);
  counter(o, "steerd_commands_busy_total", "Commands refused BUSY because their sender's inbox was full.",
          st->commands_busy);
  counter(o, "steerd_command_budget_exhausted_total",
          "Ticks whose --command-budget-us ran out with commands still waiting.",
          st->command_budget_exhausted);
  counter_s(o, "steerd_command_seconds_total", "Loop time spent running commands.", st->command_ns_total);
  counter_s(o, "steerd_command_wait_seconds_total", "Time the commands run waited in their inboxes.",
            st->command_wait_ns_total);
  gauge(o, "steerd_command_wait_max_seconds", "The longest any command has waited in its inbox.",
        (double)st->command_wait_ns_max / 1e9);
}

static void checkpoints(out *o, const steerd_metrics_input *in) {
  const steerd_checkpoint_stats *ck = &in->checkpoints;
  gauge(o, "steerd_checkpoints_enabled", "1 when a state file is configured (--state).", ck->enabled);
  counter(o, "steerd_checkpoints_written_total", "Checkpoints written to the state file.", ck->written);
  counter(o, "steerd_checkpoints_failed_total", "Checkpoints that could not be written.", ck->failed);
  gauge(o, "steerd_checkpoint_failing", "1 while the last checkpoint attempt failed.", ck->failing);
  double last = ck->last_ok_unix_ms ? (double)ck->last_ok_unix_ms / 1000.0 : in->start_time_unix_s;
  gauge(o, "steerd_checkpoint_last_success_age_seconds",
        "Seconds since the last good checkpoint (since the start while there has been none).",
        ck->enabled ? in->now_unix_s - last : 0.0);
  gauge(o, "steerd_checkpoint_last_size_bytes", "Size of the last good checkpoint.", (double)ck->last_bytes);
  gauge(o, "steerd_checkpoint_last_duration_seconds", "Loop time the last good checkpoint took.",
        (double)ck->last_loop_us / 1e6);
  gauge(o, "steerd_checkpoint_last_write_seconds",
        "Time the last good checkpoint's writer took to make (when forked), seal, write and rename it.",
        (double)ck->last_write_us / 1e6);
  counter(o, "steerd_checkpoint_fork_failed_total",
          "Checkpoints whose writer process could not be forked, so that the loop made the image.",
          ck->fork_failed);
}

size_t steerd_metrics_render(char *buf, size_t cap, const steerd_metrics_input *in) {
  out o = {buf, cap, 0, 0};
  const steerd_server_stats *st = &in->stats;
  family(&o, "steerd_build_info", "gauge", "Always 1; the labels name the build.");
  put(&o, "steerd_build_info{version=\"%s\",protocol=\"%d\"} 1\n", in->version, PROTO_VERSION);
  gauge(&o, "steerd_start_time_seconds", "When the process started, seconds since the Unix epoch.",
        in->start_time_unix_s);
  gauge(&o, "steerd_ready", "1 when /readyz answers 200.", in->ready);
  tick_histogram(&o, st);
  counter(&o, "steerd_ticks_total", "World steps run.", st->ticks);
  counter(&o, "steerd_tick_overruns_total", "Timer wake-ups that found more than one tick due.",
          st->overruns);
  counter(&o, "steerd_ticks_skipped_total", "Ticks dropped after stalls longer than --max-catchup ticks.",
          st->ticks_skipped);
  counter(&o, "steerd_ticks_slow_total", "World steps that took longer than a tick period.", st->slow_ticks);
  gauge(&o, "steerd_agents", "Agents in the world.", in->agents);
  gauge(&o, "steerd_agents_max", "Capacity of the world (--max-agents).", in->agents_max);
  clients(&o, in);
  loop_phases(&o, st);
  worst_tick(&o, in);
  commands(&o, st);
  counter(&o, "steerd_commands_rate_limited_total", "Commands refused with RATE_LIMITED.", st->rate_limited);
  counter(&o, "steerd_malformed_packets_total", "Packets that did not decode (answered BAD_MESSAGE etc.).",
          st->bad_messages);
  counter(&o, "steerd_auth_failures_total", "HELLOs refused for their token.", st->auth_failures);
  family(&o, "steerd_peers_dropped_total", "counter", "Peers the server disconnected, by reason.");
  put(&o, "steerd_peers_dropped_total{reason=\"abuse\"} %llu\n", (unsigned long long)st->abuse_disconnects);
  put(&o, "steerd_peers_dropped_total{reason=\"hello_timeout\"} %llu\n",
      (unsigned long long)st->hello_timeouts);
  put(&o, "steerd_peers_dropped_total{reason=\"queue_overflow\"} %llu\n",
      (unsigned long long)st->queue_overflows);
  put(&o, "steerd_peers_dropped_total{reason=\"pending_evicted\"} %llu\n",
      (unsigned long long)st->pending_evicted);
  counter(&o, "steerd_connections_refused_total", "Connections refused: no client or pending slot free.",
          st->refused_full);
  counter(&o, "steerd_handshakes_reset_total", "Half-open ENet handshakes reset.", st->handshakes_reset);
  counter(&o, "steerd_errors_suppressed_total", "ERRORs not sent: all but the first before WELCOME.",
          st->errors_suppressed);
  counter(&o, "steerd_queue_dropped_packets_total",
          "Packets not queued to a peer over its queue limit before it was dropped.", st->queue_dropped);
  counter(&o, "steerd_enet_service_cuts_total", "ENet service passes stopped by the per-wake-up budget.",
          st->service_cut);
  snapshots(&o, in);
  checkpoints(&o, in);
  planner(&o, in);
  command_queue(&o, st);
  counter(&o, "steerd_agents_stuck_total",
          "STUCK events: agents that made no progress toward their goal for their stuck_time.",
          st->stuck_events);
  gauge(&o, "steerd_map_obstacles", "Obstacles in the world's map.", st->map_obstacles);
  gauge(&o, "steerd_map_version", "The map's version (bumped by every change).", st->map_version);
  counter(&o, "steerd_map_changes_total", "Changes of the map applied at runtime (admin commands).",
          st->map_changes);
  counter(&o, "steerd_map_parts_sent_total", "MAP packets sent to clients.", st->map_parts_sent);
  counter(&o, "steerd_map_sent_bytes_total", "Payload bytes of the MAP packets sent.", st->map_bytes_sent);
  counter(&o, "steerd_map_changed_sent_total", "MAP_CHANGED messages sent, one per client per change.",
          st->map_changed_sent);
  gauge(&o, "steerd_views", "Live views (WebSockets of the web page) open.", in->views);
  counter(&o, "steerd_view_frames_total", "Snapshots sent to live views.", in->view_frames);
  counter(&o, "steerd_view_frames_skipped_total",
          "Snapshots not sent to a live view because its previous one was still being written.",
          in->view_frames_skipped);
  counter(&o, "steerd_view_sent_bytes_total", "Payload bytes sent to live views.", in->view_bytes);
  counter(&o, "steerd_http_requests_total", "HTTP requests answered.", in->http_requests);
  gauge(&o, "steerd_http_connections", "HTTP connections open (the live views' included).",
        (double)in->http_connections);
  family(&o, "steerd_http_connections_refused_total", "counter",
         "HTTP connections answered 503 and closed: every slot taken (--http-max-connections), or every slot "
         "of the peer's address (--http-max-per-address).");
  put(&o, "steerd_http_connections_refused_total{reason=\"full\"} %llu\n",
      (unsigned long long)in->http_refused_full);
  put(&o, "steerd_http_connections_refused_total{reason=\"address\"} %llu\n",
      (unsigned long long)in->http_refused_address);
  return o.overflowed ? 0 : o.len;
}
