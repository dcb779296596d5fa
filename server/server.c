/* server.c: see server.h. The loop: ticks, ENet, checkpoints and the server's lifecycle
 * (server_internal.h lists what the other server_*.c files do). */
#include "server_internal.h"
#include "wire_core.h"

void steerd_server_charge_http(steerd_server *s, uint64_t ns) { charge(s, STEERD_PHASE_HTTP, ns); }

/* A tick found others due with it (an overrun): the phase that took most of
 * the loop since the last tick is its cause. */
static void charge_overrun(steerd_server *s) {
  int worst = 0;
  for (int p = 1; p < STEERD_LOOP_PHASES; p++)
    if (s->phase_ns[p] > s->phase_ns[worst])
      worst = p;
  s->stats.overruns_by_phase[worst]++;
}

/* ---- the tick ------------------------------------------------------------ */

/* The step's time in the tick's counters and histogram. */
static void count_step(steerd_server *s, uint64_t spent) {
  charge(s, STEERD_PHASE_STEP, spent);
  s->stats.step_ns_total += spent;
  if (spent > s->stats.step_ns_max)
    s->stats.step_ns_max = spent;
  for (int b = 0; b < STEERD_TICK_BUCKETS; b++)
    if ((double)spent <= steerd_tick_bucket_bounds[b] * 1e9)
      s->stats.tick_seconds_bucket[b]++;
  if (spent > 1000000000ull / s->cfg.tick_rate)
    s->stats.slow_ticks++;
  s->stats.ticks++;
}

/* The tick's events to the clients that see them: the planner's (served
 * before the step), then the world's. */
static void queue_events(steerd_server *s, const steer_event *ev, uint32_t nev) {
  uint32_t n;
  const steer_plan_event *pe = steer_planner_events(s->planner, &n);
  for (uint32_t i = 0; i < n; i++) {
    proto_event e = steerd_goto_event(&pe[i]);
    steer_agent_info info;
    if (steer_world_get(s->world, pe[i].agent, &info) == STEER_OK)
      send_event(s, &e, info.state.position, info.owner);
  }
  for (uint32_t i = 0; i < nev; i++) {
    proto_event e = wire_event_of(&ev[i]);
    steer_agent_info info;
    if (steer_world_get(s->world, ev[i].agent, &info) == STEER_OK)
      send_event(s, &e, info.state.position, info.owner);
  }
}

/* One tick: plans, the step, its events, the demo's reaction to them.
 * Commands are a pass of their own (run_commands) and snapshots go out in the
 * send pass (on_timer lists the passes in order). */
static void run_tick(steerd_server *s) {
  uint64_t t0 = uv_hrtime();
  steerd_goto_before_step(s->planner, s->world); /* plans are part of the tick's time */
  steer_world_step(s->world, s->dt);
  steerd_goto_after_step(s->planner, s->world);
  count_step(s, uv_hrtime() - t0);
  uint32_t n;
  const steer_event *ev = steer_world_events(s->world, &n);
  queue_events(s, ev, n);
  if (s->demo_on)
    steerd_demo_update(&s->demo, s->world, ev, n);
}

static void log_stats(steerd_server *s) {
  steerd_server_stats *st = &s->stats;
  LOG_INFO(
      "stats: %u clients, %u agents, tick %llu, %llu overruns, %llu skipped, %llu slow, mean step %.1f us, "
      "longest step %.1f ms, %llu snapshots, %llu commands, %llu bad messages",
      st->clients, steer_world_count(s->world), (unsigned long long)steer_world_tick(s->world),
      (unsigned long long)st->overruns, (unsigned long long)st->ticks_skipped,
      (unsigned long long)st->slow_ticks, st->ticks ? (double)st->step_ns_total / st->ticks / 1000.0 : 0.0,
      (double)st->step_ns_max / 1e6, (unsigned long long)st->snapshots, (unsigned long long)st->commands,
      (unsigned long long)st->bad_messages);
  if (st->queue_overflows || st->errors_suppressed || st->pending_evicted || st->handshakes_reset ||
      st->refused_full || st->service_cut || s->peer_log.total_suppressed || st->events_lost)
    LOG_INFO("abuse stats: %llu peers dropped for a full send queue, %llu errors not sent, %llu pending "
             "connections evicted, %llu half-open handshakes reset, %llu connections refused (full), %llu "
             "service passes cut short, %llu log lines suppressed, %llu events dropped for clients behind",
             (unsigned long long)st->queue_overflows, (unsigned long long)st->errors_suppressed,
             (unsigned long long)st->pending_evicted, (unsigned long long)st->handshakes_reset,
             (unsigned long long)st->refused_full, (unsigned long long)st->service_cut,
             (unsigned long long)s->peer_log.total_suppressed, (unsigned long long)st->events_lost);
  if (st->send_rounds_limited)
    LOG_INFO("send budget stats: %llu snapshot rounds cut short, %llu full snapshots and %llu delta frames "
             "deferred to a later round (--send-budget-kbps, --send-budget-us); reckoned costs: %.1f us per "
             "delta frame, %.2f us per full part and client",
             (unsigned long long)st->send_rounds_limited, (unsigned long long)st->full_budget_deferred,
             (unsigned long long)st->delta_budget_deferred, (double)s->delta_ns_per_frame / 1000.0,
             (double)s->full_ns_per_part / 1000.0);
  if (st->commands_busy || st->command_budget_exhausted)
    LOG_INFO("command stats: %llu run, %llu refused BUSY (--command-queue), %llu ticks out of "
             "--command-budget-us with commands waiting, longest wait %.1f ms",
             (unsigned long long)s->cmdsched.run, (unsigned long long)st->commands_busy,
             (unsigned long long)st->command_budget_exhausted, (double)s->cmdsched.wait_ns_max / 1e6);
  if (st->full_deferred)
    LOG_INFO("full snapshot stats: %llu sent, %llu deferred by --full-rate-kbps",
             (unsigned long long)st->full_sent, (unsigned long long)st->full_deferred);
  steerd_netcode_stats ns;
  steerd_netcode_get_stats(s->netcode, &ns);
  if (ns.frames > 0) /* many frames without a baseline while clients stay: --delta-pool too small? */
    LOG_INFO(
        "delta stats: %llu frames (%llu without a baseline), %llu bytes, %llu changes, %llu deferred, "
        "%llu kept thanks to frames in flight, %llu acknowledged frames no longer known; record pool: %u "
        "chunks of 64 KB in use (%u at most), %llu reused by their client, %llu keyframes and %llu frames "
        "not sent for want of room",
        (unsigned long long)ns.frames, (unsigned long long)ns.frames_full, (unsigned long long)ns.bytes,
        (unsigned long long)ns.changes, (unsigned long long)ns.deferred,
        (unsigned long long)ns.kept_in_flight, (unsigned long long)ns.baselines_lost, ns.chunks_used,
        ns.chunks_max, (unsigned long long)ns.chunks_reused, (unsigned long long)ns.keyframes_for_room,
        (unsigned long long)ns.frames_unkept);
}

static void close_handles(steerd_server *s);

/* Peers that have not been WELCOMEd within the hello timeout go. */
static void drop_late_hellos(steerd_server *s, uint64_t now) {
  uint64_t limit = (uint64_t)s->cfg.hello_timeout_ms * 1000000ull;
  for (uint32_t i = 0; i < s->cfg.max_pending; i++) {
    client *c = &s->pending[i];
    if (!c->peer || now - c->connected_ns <= limit)
      continue;
    if (!c->closing) { /* told reliably, as ENet's disconnect is acknowledged */
      s->stats.hello_timeouts++;
      c->closing = 1;
      PEER_LOG(s, STEERD_LOG_WARN, "client %u (%s): no WELCOME within %u ms: disconnecting (timeout)", c->id,
               c->addr, s->cfg.hello_timeout_ms);
      enet_peer_disconnect(c->peer, PROTO_DISCONNECT_TIMEOUT);
    } else if (now - c->connected_ns > 2 * limit) { /* it does not even acknowledge: the slot is freed now */
      client_kill(s, c, PROTO_DISCONNECT_TIMEOUT, "no WELCOME, and no answer to the disconnect");
    }
  }
  uint64_t handshake = limit < HANDSHAKE_TIMEOUT_NS ? limit : HANDSHAKE_TIMEOUT_NS;
  uint32_t reset = steerd_guard_reap_handshakes(s->host, s->handshake_ns, now, handshake, s->cfg.max_pending);
  if (reset) {
    s->stats.handshakes_reset += reset;
    PEER_LOG(s, STEERD_LOG_WARN, "reset %u half-open ENet handshakes (too old, or more than %u at once)",
             reset, s->cfg.max_pending);
  }
}

/* ---- checkpoints ------------------------------------------------------------ */

/* A checkpoint's image in the checkpointer's buffer: the world and the
 * server's records (st) as steerd_persist_encode lays them out; detail gets
 * the log line's end. Its length, or 0 with a reason in err. Runs on the loop,
 * or in a forked writer on its copy of the loop's memory. */
typedef struct image_job {
  steerd_server *s;
  steerd_persist_server *st;
} image_job;

static size_t make_image(void *ctx, steerd_checkpointer *ck, char *detail, size_t detail_cap, char *err,
                         size_t errcap) {
  const image_job *job = ctx;
  steerd_server *s = job->s;
  size_t world_len = steer_world_state_size(s->world), len = 0;
  size_t cap = steerd_persist_size(world_len, job->st);
  uint8_t *buf = steerd_checkpointer_buffer(ck, cap);
  uint8_t *world = buf ? buf + STEERD_PERSIST_WORLD_AT : NULL;
  if (!buf || steer_world_save(s->world, world, cap - STEERD_PERSIST_WORLD_AT, &world_len) != STEER_OK ||
      (len = steerd_persist_encode(buf, cap, world, world_len, job->st, 0)) == 0) {
    snprintf(err, errcap, "out of memory for the image");
    return 0;
  }
  int dn = snprintf(detail, detail_cap, "at tick %llu: %u agents, state hash %016llx",
                    (unsigned long long)steer_world_tick(s->world), steer_world_count(s->world),
                    (unsigned long long)steer_world_hash(s->world));
  if (job->st->planner_len && dn > 0 && (size_t)dn < detail_cap)
    snprintf(detail + dn, detail_cap - (size_t)dn, ", GOTO hash %016llx",
             (unsigned long long)steer_planner_hash(s->planner));
  return len;
}

/* The world and who owns what, written atomically to the state file. The
 * interval's and SIGHUP's checkpoints fork a writer that makes the image,
 * checksums, writes, fsyncs and renames (the loop pays for the planner's
 * records and the fork); where no process can be started, the loop makes the
 * image and a worker thread writes it, and at shutdown (now) all of it runs
 * on this thread after any write in flight. A failed checkpoint is logged and
 * counted and the previous file is intact. STEERD_CHECKPOINT_EBUSY: one is
 * still being written (try again later). */
static int checkpoint(steerd_server *s, const char *why, int now) {
  if (!s->ckpt)
    return 0;
  if (now)
    steerd_checkpointer_wait(s->ckpt);
  else if (steerd_checkpointer_busy(s->ckpt))
    return STEERD_CHECKPOINT_EBUSY;
  uint64_t t0 = uv_hrtime(), cpu0 = thread_cpu_ns();
  steerd_persist_server st;
  memset(&st, 0, sizeof(st));
  st.next_client_id = s->next_client_id;
  st.owners = s->ckpt_owners;
  for (uint32_t i = 0; i < s->owner_cap; i++) {
    const owner_rec *o = &s->owners[i];
    if (!o->id || o->agents == 0)
      continue;
    steerd_persist_owner *po = &st.owners[st.owner_count++];
    po->id = o->id;
    po->named = (uint8_t)o->named;
    snprintf(po->name, sizeof(po->name), "%s", o->name);
    po->agents = o->agents;
  }
  st.demo_on = s->demo_on;
  st.demo = s->demo;
  if (steerd_goto_save(s->planner, &s->plan_ckpt, &s->plan_ckpt_cap, &st) != STEER_OK) {
    steerd_checkpointer_failed(s->ckpt, why, "out of memory for the planner's state");
    return STEERD_CHECKPOINT_ENOMEM;
  }
  image_job job = {s, &st};
  uint64_t tick = steer_world_tick(s->world);
  if (!now) {
    int rc = steerd_checkpointer_fork(s->ckpt, make_image, &job, steerd_persist_seal, why, tick,
                                      uv_hrtime() - t0, thread_cpu_ns() - cpu0);
    if (rc != STEERD_CHECKPOINT_EAGAIN)
      return rc;
  }
  char detail[192], err[64];
  size_t len = make_image(&job, s->ckpt, detail, sizeof detail, err, sizeof err);
  if (len == 0) {
    steerd_checkpointer_failed(s->ckpt, why, err);
    return STEERD_CHECKPOINT_ENOMEM;
  }
  uint64_t loop_ns = uv_hrtime() - t0, cpu_ns = thread_cpu_ns() - cpu0;
  if (now)
    return steerd_checkpointer_write_now(s->ckpt, len, steerd_persist_seal, why, detail, tick, loop_ns,
                                         cpu_ns);
  return steerd_checkpointer_submit(s->ckpt, len, steerd_persist_seal, why, detail, tick, loop_ns, cpu_ns);
}

/* The world of the state file, or NULL with *fresh set when there is none to
 * restore (no file yet, or --state-reset), or NULL after logging why the file
 * cannot be used: the server then refuses to start rather than start empty. */
static steer_world *restore(steerd_server *s, steerd_persist_server *st, int *fresh) {
  const steerd_config *cfg = &s->cfg;
  *fresh = 0;
  uint8_t *data = NULL;
  size_t len = 0;
  char err[256];
  int rc = steerd_checkpoint_read(cfg->state_file, &data, &len, err, sizeof(err));
  if (rc == STEERD_CHECKPOINT_ENOENT) {
    s->no_state_file = 1; /* logged once the server is sure to start */
    *fresh = 1;
    return NULL;
  }
  if (rc != STEERD_CHECKPOINT_OK) {
    LOG_ERROR("cannot read the state file: %s", err);
    return NULL;
  }
  if (cfg->state_reset) {
    LOG_WARN(
        "--state-reset: ignoring the state file %s (%zu bytes); it is overwritten at the next checkpoint",
        cfg->state_file, len);
    free(data);
    *fresh = 1;
    return NULL;
  }
  const uint8_t *world_bytes = NULL;
  size_t world_len = 0;
  steer_world *w = NULL;
  rc = steerd_persist_decode(data, len, &world_bytes, &world_len, st);
  if (rc == STEER_OK)
    w = steer_world_load(world_bytes, world_len, &rc);
  /* The image stays for restore_owners. */
  s->restored = data;
  s->restored_len = len;
  if (!w) {
    LOG_ERROR("the state file %s cannot be restored: %s. Refusing to start with an empty world; "
              "fix or move the file, or start with --state-reset to discard it",
              cfg->state_file, steer_strerror(rc));
    return NULL;
  }
  return w;
}

/* Owner records and the demo from the state file's server part. */
static int restore_owners(steerd_server *s, const steerd_persist_server *head) {
  steerd_persist_server st;
  memset(&st, 0, sizeof(st));
  st.owners = s->ckpt_owners;
  st.owner_cap = s->owner_cap;
  size_t world_len;
  const uint8_t *world_bytes;
  /* The second pass over the same image: now there is room for the owners. */
  if (steerd_persist_decode(s->restored, s->restored_len, &world_bytes, &world_len, &st) != STEER_OK ||
      st.owner_count != head->owner_count || st.owner_count > s->owner_cap) {
    LOG_ERROR("the state file %s lists more owners than the world can hold", s->cfg.state_file);
    return -1;
  }
  uint64_t now = uv_hrtime();
  for (uint32_t i = 0; i < st.owner_count; i++) {
    const steerd_persist_owner *po = &st.owners[i];
    owner_rec *o = owner_new(s, po->id, po->name, po->named);
    if (!o)
      return -1;
    o->agents = po->agents;
    if (s->cfg.orphan_policy == STEERD_ORPHAN_DESPAWN) {
      o->orphaned_ns = now; /* the grace starts again at the restart */
      s->orphans_pending++;
    }
  }
  if (st.next_client_id > s->next_client_id)
    s->next_client_id = st.next_client_id;
  if (st.demo_on) {
    s->demo = st.demo;
    steerd_demo_resume(&s->demo);
    s->demo.edit_map = demo_map_edit;
    s->demo.edit_ctx = s;
    s->demo_on = 1;
    s->demo_resumed = 1;
  }
  int rc = steerd_goto_restore(s->planner, &st);
  if (rc != STEER_OK) {
    LOG_ERROR("the state file %s cannot be restored: its GOTO planner state: %s", s->cfg.state_file,
              steer_strerror(rc));
    return -1;
  }
  if (st.planner_len)
    LOG_INFO("restored GOTO: %u agents, %u plan requests waiting, GOTO hash %016llx",
             steer_planner_active(s->planner), steer_planner_get_stats(s->planner).queued,
             (unsigned long long)steer_planner_hash(s->planner));
  if (s->demo_on) /* the demo's GOTO NPCs go on with the restored planner */
    steerd_demo_set_planner(&s->demo, s->world, s->planner, 0);
  return 0;
}

/* A snapshot deadline's snapshot carries the last tick due at or before the
 * deadline (§7.5). It goes out in the same callback that ran that tick, before
 * any command is read, so it is exactly the state after that step (§4): when
 * the tick just run is the last one due by the next deadline (the tick after it
 * falls later), the snapshot goes now, early, and that deadline is consumed. */
static int snapshot_due(steerd_server *s, uint64_t now, uint32_t ran) {
  uint64_t deadline = steerd_ticker_deadline(&s->snapshots);
  if (ran && now < deadline && steerd_ticker_deadline(&s->ticks) > deadline)
    now = deadline;
  if (steerd_ticker_due(&s->snapshots, now) == 0)
    return 0;
  /* A deadline with no step since the previous one cannot come while
   * snapshot_rate <= tick_rate; if it did, commands may have changed the world
   * since the last step, and a snapshot then would not be a tick's state. */
  return ran != 0;
}

/* The pass of every wake-up before the ticks: each client's event share,
 * start-up builds, peers too slow to say HELLO, orphans' grace, and ENet's
 * receive times copied before ENet can clear them. */
static void housekeeping(steerd_server *s, uint64_t now) {
  uint32_t welcomed = s->stats.clients - s->stats.pending;
  s->event_share = EVENTS_IN_FLIGHT / (welcomed ? welcomed : 1u);
  if (s->event_share > s->event_backlog)
    s->event_share = s->event_backlog;
  if (s->event_share < EVENTS_SHARE_MIN)
    s->event_share = EVENTS_SHARE_MIN;
  if (s->warming)
    steerd_server_warming(s);
  drop_late_hellos(s, now);
  despawn_orphans(s, now);
  for (uint32_t i = 0; i < client_slots(s); i++) {
    client *c = client_at(s, i);
    if (c->peer)
      c->last_rx_ms = c->peer->lastReceiveTime;
  }
}

/* The period of the last tick run, ending now, into the ring of tick_log. */
static void log_tick_work(steerd_server *s) {
  if (s->stats.ticks == 0)
    return; /* the first tick has no period before it */
  steerd_tick_work *w = &s->tick_log[s->tick_logged++ % STEERD_TICK_LOG];
  w->tick = steer_world_tick(s->world);
  for (int p = 0; p < STEERD_LOOP_PHASES; p++)
    w->us[p] = s->phase_ns[p] / 1000u > UINT32_MAX ? UINT32_MAX : (uint32_t)(s->phase_ns[p] / 1000u);
}

uint32_t steerd_server_tick_work_max(const steerd_server *s, steerd_tick_work *worst) {
  uint32_t kept = s->tick_logged < STEERD_TICK_LOG ? (uint32_t)s->tick_logged : STEERD_TICK_LOG;
  uint64_t most = 0;
  memset(worst, 0, sizeof *worst);
  for (uint32_t i = 0; i < kept; i++) {
    uint64_t sum = 0;
    for (int p = 0; p < STEERD_LOOP_PHASES; p++)
      sum += s->tick_log[i].us[p];
    if (sum > most || i == 0) {
      most = sum;
      *worst = s->tick_log[i];
    }
  }
  return kept;
}

uint32_t steerd_server_tick_log(const steerd_server *s, uint64_t after, steerd_tick_work *out, uint32_t max) {
  uint64_t kept = s->tick_logged < STEERD_TICK_LOG ? s->tick_logged : STEERD_TICK_LOG;
  uint64_t first = s->tick_logged - kept;
  while (first < s->tick_logged && s->tick_log[first % STEERD_TICK_LOG].tick <= after)
    first++;
  if (s->tick_logged - first > max)
    first = s->tick_logged - max;
  uint32_t n = 0;
  for (uint64_t i = first; i < s->tick_logged; i++)
    out[n++] = s->tick_log[i % STEERD_TICK_LOG];
  return n;
}

/* The ticks due by now (more than one after a stall), each timed against its
 * slot; a new tick renews the command budget. The number run. */
static uint32_t run_due_ticks(steerd_server *s, uint64_t now) {
  uint64_t overruns = s->ticks.overruns;
  uint32_t due = steerd_ticker_due(&s->ticks, now);
  if (s->ticks.overruns != overruns)
    charge_overrun(s);
  if (!due)
    return 0;
  log_tick_work(s);
  memset(s->phase_ns, 0, sizeof s->phase_ns);
  for (uint32_t i = 0; i < due; i++) {
    /* After a stall the steps run in the last `due` slots consumed (the skipped ones come first). */
    uint64_t slot = s->ticks.index - (due - 1u - i), slot_ns = steerd_ticker_slot_ns(&s->ticks, slot);
    s->tick_time_us = (slot_ns - s->start_ns) / 1000u;
    uint64_t late = uv_hrtime() - slot_ns;
    s->stats.tick_late_ns_total += late;
    for (int b = 0; b < STEERD_TICK_BUCKETS; b++)
      if ((double)late <= steerd_tick_bucket_bounds[b] * 1e9)
        s->stats.tick_late_bucket[b]++;
    run_tick(s);
  }
  s->cmd_budget_left_ns = (uint64_t)s->cfg.command_budget_us * 1000u;
  s->cmd_budget_spent = 0;
  return due;
}

/* A snapshot round when one is due, the events and the map streams. */
static void send_pass(steerd_server *s, uint64_t now, uint32_t ran) {
  uint64_t t0 = uv_hrtime();
  if (snapshot_due(s, now, ran))
    send_snapshot(s);
  s->stats.overruns = s->ticks.overruns;
  s->stats.ticks_skipped = s->ticks.skipped;
  flush_events(s);
  send_map_streams(s);
  charge(s, STEERD_PHASE_SEND, uv_hrtime() - t0);
}

/* A finished checkpoint's result, then the one asked for (SIGHUP) and the
 * interval's, each when none is in flight. */
static void checkpoint_pass(steerd_server *s, uint64_t now) {
  uint64_t t0 = uv_hrtime();
  steerd_checkpointer_poll(s->ckpt);
  if (s->ckpt_requested && checkpoint(s, s->ckpt_requested, 0) != STEERD_CHECKPOINT_EBUSY)
    s->ckpt_requested = NULL;
  /* One in flight still: the interval's checkpoint follows as soon as it is done. */
  if (s->next_checkpoint_ns && now >= s->next_checkpoint_ns &&
      checkpoint(s, "interval", 0) != STEERD_CHECKPOINT_EBUSY)
    s->next_checkpoint_ns = now + (uint64_t)s->cfg.checkpoint_interval_s * 1000000000ull;
  charge(s, STEERD_PHASE_CHECKPOINT, uv_hrtime() - t0);
}

static void on_timer(uv_timer_t *t);

/* Sleeps until the sooner deadline, rounded up to libuv's millisecond timer
 * (deadlines are absolute, so the rounding never accumulates), or comes back
 * right after the loop has polled when ENet has events left over. */
static void sleep_until_due(steerd_server *s, int more) {
  uint64_t now = uv_hrtime();
  uint64_t wait = steerd_ticker_wait_ns(&s->ticks, now);
  uint64_t wait_snap = steerd_ticker_wait_ns(&s->snapshots, now);
  if (wait_snap < wait)
    wait = wait_snap;
  if (more)
    wait = 0;
  uv_timer_start(&s->timer, on_timer, (wait + 999999u) / 1000000u, 0);
}

/* Every wake-up of the loop, as its passes in order. */
static void on_timer(uv_timer_t *t) {
  steerd_server *s = t->data;
  uint64_t now = uv_hrtime();
  if (s->stopping) {
    service_enet(s);
    if ((s->stats.clients == 0 && now >= s->stop_earliest_ns) || now >= s->stop_deadline_ns) {
      close_handles(s);
      return;
    }
    uv_timer_start(&s->timer, on_timer, 10, 0);
    return;
  }
  s->last_tick_ns = now;
  s->service_pass++;
  housekeeping(s, now);
  uint32_t ran = run_due_ticks(s, now);
  send_pass(s, now, ran);
  reap_overflowed(s);
  int more = service_enet(s); /* timeouts and resends, then everything queued goes out */
  run_commands(s);
  flush_events(s);
  reap_overflowed(s);
  enet_host_flush(s->host);
  if (now >= s->next_stats_ns) {
    if (s->next_stats_ns)
      log_stats(s);
    s->next_stats_ns = now + STATS_INTERVAL_NS;
  }
  checkpoint_pass(s, now);
  sleep_until_due(s, more);
}

/* ---- ENet ---------------------------------------------------------------- */

static client *client_of(ENetPeer *peer) { return peer->data; }

static void on_connect(steerd_server *s, ENetEvent *ev) {
  ENetPeer *peer = ev->peer;
  char host[48];
  if (enet_address_get_host_ip(&peer->address, host, sizeof(host)) != 0)
    strcpy(host, "?");
  if (s->stopping) {
    enet_peer_disconnect(peer, PROTO_DISCONNECT_SHUTDOWN);
    return;
  }
  if (ev->data != PROTO_VERSION || peer->channelCount < PROTO_CHANNEL_COUNT) {
    PEER_LOG(s, STEERD_LOG_WARN, "refused %s:%u: protocol %u with %u channels (want %d with %d)", host,
             peer->address.port, ev->data, (unsigned)peer->channelCount, PROTO_VERSION, PROTO_CHANNEL_COUNT);
    enet_peer_disconnect(peer, PROTO_DISCONNECT_VERSION);
    return;
  }
  uint32_t free_slots = 0;
  for (uint32_t i = 0; i < s->cfg.max_clients && !free_slots; i++)
    free_slots += s->clients[i].peer == NULL;
  client *c = free_slots ? pending_slot(s, uv_hrtime()) : NULL;
  if (!c) {
    s->stats.refused_full++;
    PEER_LOG(s, STEERD_LOG_WARN, "refused %s:%u: server full (%u clients, %u connections waiting for HELLO)",
             host, peer->address.port, s->cfg.max_clients, s->cfg.max_pending);
    enet_peer_disconnect(peer, PROTO_DISCONNECT_FULL);
    return;
  }
  memset(c, 0, sizeof(*c));
  c->peer = peer;
  c->id = s->next_client_id++;
  c->connected_ns = uv_hrtime();
  c->bucket_ns = c->connected_ns;
  c->tokens = (double)s->cfg.rate_burst;
  snprintf(c->addr, sizeof(c->addr), "%s:%u", host, peer->address.port);
  peer->data = c;
  enet_peer_timeout(peer, 0, s->cfg.client_timeout_ms, s->cfg.client_timeout_ms);
  /* No ENet packet throttle (deceleration 0; the peer is told too): it drops
   * unreliable packets, snapshots and deltas, when the round trip grows, which
   * here means the server was busy rather than the link congested; the delta
   * byte budget bounds what a client gets. */
  enet_peer_throttle_configure(peer, ENET_PEER_PACKET_THROTTLE_INTERVAL,
                               ENET_PEER_PACKET_THROTTLE_ACCELERATION, 0);
  s->stats.clients++;
  s->stats.pending++;
  LOG_DEBUG("client %u connected from %s", c->id, c->addr); /* INFO at WELCOME: "says hello" */
}

static void on_disconnect(steerd_server *s, ENetEvent *ev) {
  client *c = client_of(ev->peer);
  if (!c)
    return; /* refused before it became a client */
  /* ENet reports a timeout and a goodbye with data 0 alike; a timeout comes
   * after --client-timeout of silence, a goodbye right after its datagram.
   * Peers that never said HELLO go through the log limiter. */
  char how[64];
  uint32_t silent = c->last_rx_ms ? enet_time_get() - c->last_rx_ms : 0;
  if (ev->data == 0 && c->last_rx_ms && silent >= s->cfg.client_timeout_ms / 4u * 3u)
    snprintf(how, sizeof how, "timed out (silent for %u ms)", silent);
  else
    snprintf(how, sizeof how, "disconnected (reason %u)", ev->data);
  if (c->welcomed)
    LOG_INFO("client %u (%s) %s after %llu commands, %llu bad messages, %llu rate limited", c->id, c->addr,
             how, (unsigned long long)c->commands, (unsigned long long)c->bad_messages,
             (unsigned long long)c->rate_limited);
  else
    PEER_LOG(s, STEERD_LOG_INFO, "client %u (%s) %s without WELCOME after %llu packets", c->id, c->addr, how,
             (unsigned long long)(c->commands + c->bad_messages));
  client_release(s, c);
}

/* Handles what ENet has received, at most SERVICE_MAX_EVENTS events and no
 * longer than until a tick is due (a flood would otherwise keep this loop
 * going for seconds while no tick runs). Returns 1 when it stopped early. */
static int service_pass(steerd_server *s) {
  ENetEvent ev;
  int rc;
  uint32_t n = 0;
  s->service_pass++;
  while ((rc = enet_host_service(s->host, &ev, 0)) > 0) {
    switch (ev.type) {
    case ENET_EVENT_TYPE_CONNECT:
      on_connect(s, &ev);
      break;
    case ENET_EVENT_TYPE_DISCONNECT:
      on_disconnect(s, &ev);
      break;
    case ENET_EVENT_TYPE_RECEIVE: {
      client *c = client_of(ev.peer);
      if (c && !s->stopping)
        receive_packet(s, c, ev.packet, ev.channelID, 0);
      else
        enet_packet_destroy(ev.packet);
      reap_overflowed(s);
      break;
    }
    default:
      break;
    }
    if (++n >= SERVICE_MAX_EVENTS ||
        (n % 64 == 0 && !s->stopping && steerd_ticker_wait_ns(&s->ticks, uv_hrtime()) == 0)) {
      s->stats.service_cut++;
      return 1;
    }
  }
  if (rc < 0)
    LOG_WARN("enet_host_service failed");
  return 0;
}

int service_enet(steerd_server *s) {
  uint64_t t0 = uv_hrtime();
  int more = service_pass(s);
  charge(s, STEERD_PHASE_ENET, uv_hrtime() - t0);
  return more;
}

static void on_readable(uv_poll_t *p, int status, int events) {
  (void)events;
  steerd_server *s = p->data;
  if (status < 0) {
    LOG_WARN("socket poll: %s", uv_strerror(status));
    return;
  }
  service_enet(s);
  run_commands(s);
  flush_events(s); /* SPAWNED and DESPAWNED of the commands just handled */
  reap_overflowed(s);
  enet_host_flush(s->host);
}

/* A PING or a HELLO (their type as the positive fixint the wire's encoders
 * write) on the command channel: answered even while a tick waits, as
 * neither changes the world and both report the last completed tick. */
static int answered_in_waits(const ENetPacket *p, uint8_t channel) {
  return channel == PROTO_CHANNEL_RELIABLE && (p->flags & ENET_PACKET_FLAG_RELIABLE) && p->dataLength >= 2 &&
         p->data[0] == 0x93 && (p->data[1] == PROTO_MSG_PING || p->data[1] == PROTO_MSG_HELLO);
}

/* Between the slices of a tick's wait for a navigation graph (planner.h): the
 * ENet host is serviced so that no client sees the server go silent: ENet
 * upkeep (acknowledgements, its pings, resends), connections and
 * disconnections (they change no agent), and PINGs and HELLOs answered at
 * once. Every other packet joins its client's inbox, run after the tick in
 * the order it came (run_commands): commands change the world only between
 * ticks, never inside one, so the tick's results are those of a tick that
 * did not wait. A PING or HELLO whose client has commands waiting waits too:
 * replies go in the order of the commands (PROTOCOL.md 10). */
static void plan_wait_service(steerd_server *s) {
  ENetEvent ev;
  uint32_t n = 0;
  while (n++ < SERVICE_MAX_EVENTS && enet_host_service(s->host, &ev, 0) > 0) {
    switch (ev.type) {
    case ENET_EVENT_TYPE_CONNECT:
      on_connect(s, &ev);
      break;
    case ENET_EVENT_TYPE_DISCONNECT:
      on_disconnect(s, &ev);
      break;
    case ENET_EVENT_TYPE_RECEIVE: {
      client *c = client_of(ev.peer);
      if (c && !s->stopping && !c->inbox.count && answered_in_waits(ev.packet, ev.channelID)) {
        handle_packet(s, c, ev.packet, ev.channelID);
        s->stats.wait_answered++;
        enet_packet_destroy(ev.packet);
      } else if (c && !s->stopping) {
        s->stats.wait_kept++;
        receive_packet(s, c, ev.packet, ev.channelID, 1);
      } else {
        enet_packet_destroy(ev.packet);
      }
      reap_overflowed(s);
      break;
    }
    default:
      break;
    }
  }
  enet_host_flush(s->host);
}

/* The planner's wait hook: ENet between the slices, and a wait longer than a
 * tick period logged when it ends, so an operator can tell a busy server from
 * a stuck one (the count and the time are in /metrics). */
static void on_plan_wait(void *ctx, float class_radius, uint64_t waited_ns, int done) {
  steerd_server *s = ctx;
  if (!done) {
    plan_wait_service(s);
    return;
  }
  if (waited_ns <= 1000000000ull / s->cfg.tick_rate)
    return;
  uint64_t sup = 0;
  if (steerd_loglimit_allow(&s->wait_log, uv_hrtime(), &sup))
    LOG_WARN("GOTO: tick %llu waited %.0f ms for the navigation graph of the %.2f m radius class (its build "
             "outlasted the class's due tick; ENet serviced meanwhile, %llu similar lines suppressed before "
             "this one)",
             (unsigned long long)steer_world_tick(s->world), (double)waited_ns / 1e6, (double)class_radius,
             (unsigned long long)sup);
}

/* ---- lifecycle ----------------------------------------------------------- */

/* The steering pass's worker threads (--threads; 0: one per core). One thread
 * needs no pool: the step runs on the loop thread as it always has. */
static int start_threads(steerd_server *s) {
  uint32_t n = s->cfg.threads ? s->cfg.threads : steer_pool_cores();
  if (n > 1) {
    s->pool = steer_pool_create(n);
    if (!s->pool) {
      LOG_ERROR("cannot start %u threads for the steering pass", n);
      return -1;
    }
    steer_world_set_pool(s->world, s->pool);
  }
  /* The delta clients' frames are encoded on the same threads (netcode.h). */
  s->delta_slots = calloc(s->cfg.max_clients, sizeof(*s->delta_slots));
  if (!s->delta_slots || steerd_netcode_set_pool(s->netcode, s->pool) != STEERD_NETCODE_OK) {
    LOG_ERROR("out of memory for encoding snapshots on %u threads", n);
    return -1;
  }
  LOG_INFO("steering pass on %u thread%s (and the delta snapshots' encoding)", n, n == 1 ? "" : "s");
  return 0;
}

/* The world: restored from the state file (--state), or new. 0, or -1 (logged). */
static int open_world(steerd_server *s, steerd_persist_server *st, int *fresh) {
  steerd_config *cfg = &s->cfg;
  if (cfg->state_file[0]) {
    /* A path that could never be checkpointed stops the server now. */
    char given[sizeof cfg->state_file], err[512];
    memcpy(given, cfg->state_file, sizeof given);
    unsigned stale = 0;
    if (steerd_checkpoint_prepare(given, cfg->state_file, sizeof(cfg->state_file), &stale, err,
                                  sizeof(err)) != STEERD_CHECKPOINT_OK) {
      LOG_ERROR("refusing to start: %s (--state)", err);
      return -1;
    }
    if (stale)
      LOG_WARN("removed %u temporary file%s of interrupted checkpoints next to %s", stale,
               stale == 1 ? "" : "s", cfg->state_file);
    if (strcmp(given, cfg->state_file) != 0)
      LOG_INFO("the state file %s is a link to %s: checkpoints replace %s", given, cfg->state_file,
               cfg->state_file);
    s->ckpt = steerd_checkpointer_create(s->loop, cfg->state_file);
    if (!s->ckpt) {
      LOG_ERROR("out of memory");
      return -1;
    }
    s->world = restore(s, st, fresh);
    if (!s->world && !*fresh)
      return -1;
  }
  if (s->world) {
    /* The file's world keeps its own capacity and bounds; flags that differ lose. */
    const steer_world_config *wc = steer_world_get_config(s->world);
    if (wc->max_agents != cfg->max_agents || wc->min.x != cfg->world_min.x || wc->min.y != cfg->world_min.y ||
        wc->max.x != cfg->world_max.x || wc->max.y != cfg->world_max.y)
      LOG_WARN("the state file's world (%u agents, bounds (%g,%g)-(%g,%g)) overrides the flags",
               wc->max_agents, wc->min.x, wc->min.y, wc->max.x, wc->max.y);
    cfg->max_agents = wc->max_agents;
    cfg->world_min = wc->min;
    cfg->world_max = wc->max;
  } else {
    steer_world_config wc = steer_default_world_config();
    wc.max_agents = cfg->max_agents;
    wc.min = cfg->world_min;
    wc.max = cfg->world_max;
    wc.seed = cfg->seed;
    wc.max_path_points = cfg->max_path_points;
    s->world = steer_world_create(&wc);
  }
  return 0;
}

/* The client slots, the owners, the scratch tables and the netcode, sized by
 * the configuration. 0, or -1 (logged). */
static int make_tables(steerd_server *s) {
  const steerd_config *cfg = &s->cfg;
  s->clients = calloc(cfg->max_clients, sizeof(*s->clients));
  s->pending = calloc(cfg->max_pending, sizeof(*s->pending));
  s->queue_cap = (size_t)cfg->client_queue_kb * 1024u;
  s->event_backlog = s->queue_cap / 4u;
  s->event_share = s->event_backlog;
  s->events = calloc((size_t)cfg->max_clients * CLIENT_EVENTS, sizeof(*s->events));
  steerd_loglimit_init(&s->peer_log, LOG_WINDOW_NS, LOG_BURST);
  steerd_loglimit_init(&s->wait_log, LOG_WINDOW_NS, LOG_BURST);
  s->part_first = calloc((size_t)cfg->max_agents + 2, sizeof(*s->part_first));
  s->full_parts = calloc((size_t)cfg->max_agents + 1, sizeof(*s->full_parts));
  s->send_cands = calloc(cfg->max_clients, sizeof(*s->send_cands));
  s->owner_cap = cfg->max_clients + cfg->max_agents;
  s->owners = calloc(s->owner_cap, sizeof(*s->owners));
  s->ckpt_owners = calloc(s->owner_cap, sizeof(*s->ckpt_owners));
  s->scratch_ids = calloc(cfg->max_agents, sizeof(*s->scratch_ids));
  s->bounds.min = wire_of_vec2(cfg->world_min);
  s->bounds.max = wire_of_vec2(cfg->world_max);
  s->bounds.max_path_points = cfg->max_path_points;
  steerd_netcode_config nc = steerd_netcode_default_config();
  nc.max_clients = cfg->max_clients;
  nc.max_agents = cfg->max_agents;
  nc.pool_records = cfg->delta_pool;
  nc.dr_position_m = (float)cfg->dr_position_cm / 100.0f;
  nc.dr_angle_rad = (float)cfg->dr_angle_deg * (STEER_PI / 180.0f);
  nc.dr_refresh = cfg->dr_refresh;
  nc.budget_bytes = cfg->snapshot_budget;
  nc.rate_bytes = (uint32_t)((uint64_t)cfg->client_rate_kbps * 1000u / 8u);
  s->netcode = steerd_netcode_create(&nc);
  s->mapsync = steerd_mapsync_create(cfg->max_clients);
  if (!s->mapsync || !s->clients || !s->pending || !s->events || !s->part_first || !s->owners ||
      !s->full_parts || !s->send_cands || !s->ckpt_owners || !s->scratch_ids || !s->world || !s->netcode) {
    LOG_ERROR("cannot create a world of %u agents in bounds (%g,%g)-(%g,%g)", cfg->max_agents,
              cfg->world_min.x, cfg->world_min.y, cfg->world_max.x, cfg->world_max.y);
    return -1;
  }
  return 0;
}

/* The planner, the restored owners, then what a fresh world starts with: the
 * demo and the map file. 0, or -1 (logged). */
static int populate_world(steerd_server *s, const steerd_persist_server *st, int fresh) {
  const steerd_config *cfg = &s->cfg;
  s->planner = steerd_goto_create(s->world, cfg->plan_budget, cfg->plan_build_delay, cfg->nav);
  if (!s->planner) {
    LOG_ERROR("out of memory for the path planner");
    return -1;
  }
  steer_planner_set_wait_hook(s->planner, on_plan_wait, s);
  if (!fresh && restore_owners(s, st) != 0)
    return -1;
  free(s->restored);
  s->restored = NULL;
  if (fresh && cfg->demo) {
    /* The demo's own level unless another map is loaded. */
    int rc =
        steerd_demo_create_ex(&s->demo, s->world, cfg->seed, cfg->map_file[0] ? STEERD_DEMO_NO_LEVEL : 0);
    if (rc == STEER_OK) /* its GOTO NPCs, served by the server's planner */
      rc = steerd_demo_set_planner(&s->demo, s->world, s->planner, 1);
    s->demo.edit_map = demo_map_edit;
    s->demo.edit_ctx = s;
    if (rc != STEER_OK) {
      LOG_ERROR("cannot build the demo world: %s (it needs bounds of +-60 m and 100 agents)",
                steer_strerror(rc));
      return -1;
    }
    s->demo_on = 1;
  }
  if (fresh && cfg->map_file[0]) {
    char why[512];
    if (steerd_map_file_load(cfg->map_file, s->world, why, sizeof why) != 0) {
      LOG_ERROR("%s", why);
      return -1;
    }
    LOG_INFO("map %s: %u obstacles, %u segments", cfg->map_file, steer_map_count(steer_world_map(s->world)),
             steer_map_segment_count(steer_world_map(s->world)));
  } else if (cfg->map_file[0]) {
    LOG_INFO("map %s not loaded: the restored world keeps its own map (%u obstacles)", cfg->map_file,
             steer_map_count(steer_world_map(s->world)));
  }
  if (cfg->state_file[0]) {
    s->next_checkpoint_ns =
        cfg->checkpoint_interval_s ? uv_hrtime() + (uint64_t)cfg->checkpoint_interval_s * 1000000000ull : 0;
    if (!fresh)
      LOG_INFO("restored %s at tick %llu: %u agents, %u owners, state hash %016llx%s", cfg->state_file,
               (unsigned long long)steer_world_tick(s->world), steer_world_count(s->world), st->owner_count,
               (unsigned long long)steer_world_hash(s->world), s->demo_on ? ", demo resumed" : "");
  }
  return 0;
}

/* Who may connect, by the bound address and the secret. 0, or -1 (logged). */
static int choose_access(steerd_server *s) {
  const steerd_config *cfg = &s->cfg;
  /* The address to bind: --bind as given, a name as it resolves, ::1 as 127.0.0.1. */
  char why[192];
  if (steerd_bind_resolve(cfg->bind, s->bind_ip, sizeof s->bind_ip, why, sizeof why) != 0) {
    LOG_ERROR("bad bind address: %s", why);
    return -1;
  }
  if (strcmp(s->bind_ip, cfg->bind) != 0)
    LOG_INFO("--bind %s: binding %s", cfg->bind, s->bind_ip);

  /* Who may connect: with a secret, holders of its tokens; without one,
   * anyone who can reach the address, so only loopback unless told. */
  if (cfg->secret_len > 0) {
    if (steerd_auth_init(&s->auth, cfg->secret, cfg->secret_len) != STEERD_AUTH_OK) {
      LOG_ERROR("cannot use the secret: %s", steerd_auth_strerror(STEERD_AUTH_ESECRET));
      return -1;
    }
    s->auth_on = 1;
    LOG_INFO("authentication on: every HELLO needs a token signed with the secret (steerd token --help)");
  } else if (steerd_address_is_loopback(s->bind_ip)) {
    LOG_WARN("no secret configured (STEERD_SECRET, --secret-file): anonymous clients are allowed, as %s%s, "
             "because the server is bound to the loopback address %s only",
             steerd_role_name(cfg->anonymous_role),
             cfg->anonymous_role_dev ? " (the loopback development default; --anonymous-role controller "
                                       "limits them to their own agents)"
                                     : "",
             cfg->bind);
  } else if (cfg->insecure) {
    LOG_WARN(
        "INSECURE: no secret configured and bound to %s: anyone who can reach it connects anonymously as "
        "%s (--insecure)",
        cfg->bind, steerd_role_name(cfg->anonymous_role));
  } else {
    LOG_ERROR(
        "refusing to start: bound to %s without a secret, anyone could command the world. Set "
        "STEERD_SECRET (or --secret-file FILE) and give clients tokens (steerd token), or pass --insecure "
        "(STEERD_INSECURE=1) to allow anonymous clients anyway",
        cfg->bind);
    return -1;
  }
  return 0;
}

/* The ENet host on the bound address. 0, or -1 (logged). */
static int open_host(steerd_server *s) {
  const steerd_config *cfg = &s->cfg;
  if (enet_initialize() != 0) {
    LOG_ERROR("enet_initialize failed");
    return -1;
  }
  ENetAddress addr;
  if (enet_address_set_host_ip(&addr, s->bind_ip) != 0) {
    LOG_ERROR("bad bind address '%s' (want an IPv4 address such as 127.0.0.1 or 0.0.0.0)", s->bind_ip);
    return -1;
  }
  addr.port = cfg->port;
  /* ENet peers for the client slots, the pending ones, and a few beyond, so a
   * client over the limit hears "server full" instead of waiting for a connect
   * that never comes. Half-open handshakes use these peers too: they are reset
   * after HANDSHAKE_TIMEOUT_NS and beyond max_pending (drop_late_hellos). */
  size_t peers = (size_t)cfg->max_clients + cfg->max_pending + SPARE_PEERS;
  if (peers > MAX_ENET_PEERS)
    peers = MAX_ENET_PEERS;
  s->handshake_ns = calloc(peers, sizeof(*s->handshake_ns));
  s->host = s->handshake_ns ? enet_host_create(&addr, peers, PROTO_CHANNEL_COUNT, 0, 0) : NULL;
  if (!s->host) {
    LOG_ERROR("cannot bind %s:%u (in use, or not an address of this machine)", s->bind_ip, cfg->port);
    return -1;
  }
  /* ENet asks for 256 KB each way. At 1 000 delta clients ~40 000 datagrams a
   * second arrive (SNAPSHOT_ACKs, ENet acknowledgements) and none is read
   * while a snapshot is encoded (~50 ms): 256 KB overflowed, and the lost acks
   * became resends and stale baselines. A snapshot's burst out (a packet or
   * two per client) fits the send buffer as well. */
  enet_socket_set_option(s->host->socket, ENET_SOCKOPT_RCVBUF, SOCKET_BUFFER);
  enet_socket_set_option(s->host->socket, ENET_SOCKOPT_SNDBUF, SOCKET_BUFFER);
  ENetAddress bound;
  if (enet_socket_get_address(s->host->socket, &bound) == 0)
    s->host->address.port = bound.port;
  return 0;
}

static void log_start(const steerd_server *s) {
  const steerd_config *cfg = &s->cfg;
  {
    uint64_t pool, quota, reserve;
    size_t rec;
    steerd_netcode_get_memory(s->netcode, &pool, &quota, &reserve, &rec);
    LOG_INFO(
        "delta snapshots: record pool %llu records (%.1f MB at most, used as needed), per client a quota of "
        "%llu (%.1f MB) and a reserve of %llu",
        (unsigned long long)pool, (double)pool * (double)rec / 1048576.0, (unsigned long long)quota,
        (double)quota * (double)rec / 1048576.0, (unsigned long long)reserve);
  }
  LOG_INFO("listening on %s:%u (udp), tick %u Hz, snapshots %u Hz, %u clients, %u agents max, demo %s",
           s->bind_ip, s->host->address.port, cfg->tick_rate, cfg->snapshot_rate, cfg->max_clients,
           cfg->max_agents, s->demo_on ? "on" : "off");
  if (s->no_state_file)
    LOG_INFO("no state file %s yet: a new world, first checkpoint in %u s", cfg->state_file,
             cfg->checkpoint_interval_s);
  if (s->demo_on && !s->demo_resumed)
    LOG_INFO("demo world: %u agents in %u groups%s", s->demo.id_count, s->demo.group_count,
             s->demo.level ? ", its level (maps/demo.json) beside them" : "");
  else if (s->demo_on)
    LOG_INFO("demo world resumed from the state file: %u agents in the world (its groups are not kept there)",
             steer_world_count(s->world));
}

steerd_server *steerd_server_create(uv_loop_t *loop, const steerd_config *cfg) {
  steerd_server *s = calloc(1, sizeof(*s));
  if (!s) {
    LOG_ERROR("out of memory");
    return NULL;
  }
  s->cfg = *cfg;
  s->loop = loop;
  s->dt = 1.0f / (float)cfg->tick_rate;
  s->next_client_id = 1;
  steerd_persist_server st;
  memset(&st, 0, sizeof(st));
  int fresh = 1;
  if (open_world(s, &st, &fresh) != 0 || make_tables(s) != 0 || start_threads(s) != 0 ||
      populate_world(s, &st, fresh) != 0 || choose_access(s) != 0 || open_host(s) != 0) {
    steerd_server_destroy(s);
    return NULL;
  }
  log_start(s);
  return s;
}

int steerd_server_start(steerd_server *s) {
  /* The GOTO graphs of the radius classes in use, on threads of their own
   * once the server listens, so a big map never keeps it deaf for seconds;
   * /readyz waits for them (steerd_server_warming). */
  s->warm_start_ns = uv_hrtime();
  s->warming = steerd_goto_warm(s->planner, s->world);
  s->start_ns = uv_hrtime();
  steerd_ticker_init(&s->ticks, s->cfg.tick_rate, s->start_ns, s->cfg.max_catchup);
  steerd_ticker_init(&s->snapshots, s->cfg.snapshot_rate, s->start_ns, 1);
  int rc = uv_poll_init_socket(s->loop, &s->poll, s->host->socket);
  if (rc == 0) {
    s->poll.data = s;
    rc = uv_poll_start(&s->poll, UV_READABLE, on_readable);
  }
  if (rc != 0) {
    LOG_ERROR("cannot watch the socket: %s", uv_strerror(rc));
    return rc;
  }
  uv_timer_init(s->loop, &s->timer);
  s->timer.data = s;
  s->handles_open = 2;
  return uv_timer_start(&s->timer, on_timer, 1000u / s->cfg.tick_rate, 0);
}

void steerd_server_shutdown(steerd_server *s, uint32_t reason) {
  if (s->stopping)
    return;
  s->stopping = 1;
  checkpoint(s, "shutdown", 1);
  /* Clients get --drain-timeout to hear the disconnect; the loop ends sooner
   * when they have all gone. */
  s->stop_deadline_ns = uv_hrtime() + (uint64_t)s->cfg.drain_timeout_ms * 1000000ull;
  /* With the HTTP port on, probes and load balancers see /readyz answer 503
   * for --drain-min, however soon the clients have gone. */
  s->stop_earliest_ns = uv_hrtime() + (s->cfg.http_port ? (uint64_t)s->cfg.drain_min_ms * 1000000ull : 0u);
  LOG_INFO("shutting down: disconnecting %u clients (%s)", s->stats.clients, proto_disconnect_name(reason));
  for (uint32_t i = 0; i < s->cfg.max_clients; i++)
    if (s->clients[i].peer)
      enet_peer_disconnect(s->clients[i].peer, reason);
  for (uint32_t i = 0; i < s->cfg.max_pending; i++)
    if (s->pending[i].peer)
      enet_peer_disconnect(s->pending[i].peer, reason);
  enet_host_flush(s->host);
  if (s->handles_open)
    uv_timer_start(&s->timer, on_timer, 10, 0);
}

static void on_closed(uv_handle_t *h) {
  steerd_server *s = h->data;
  s->handles_open--;
}

static void close_handles(steerd_server *s) {
  log_stats(s);
  if (s->observer.on_stopped)
    s->observer.on_stopped(s->observer.arg);
  uv_timer_stop(&s->timer);
  uv_poll_stop(&s->poll);
  uv_close((uv_handle_t *)&s->timer, on_closed);
  uv_close((uv_handle_t *)&s->poll, on_closed);
}

void steerd_server_destroy(steerd_server *s) {
  if (!s)
    return;
  for (uint32_t i = 0; s->clients && s->pending && i < client_slots(s); i++)
    steerd_cmdq_clear(&client_at(s, i)->inbox);
  if (s->host) {
    enet_host_destroy(s->host);
    enet_deinitialize();
  }
  steer_planner_destroy(s->planner);
  free(s->plan_ckpt);
  steer_world_destroy(s->world);
  steer_pool_destroy(s->pool); /* after the world that borrowed it */
  steerd_netcode_destroy(s->netcode);
  steerd_mapsync_destroy(s->mapsync);
  free(s->clients);
  free(s->delta_slots);
  free(s->pending);
  free(s->events);
  free(s->handshake_ns);
  free(s->part_first);
  free(s->full_parts);
  free(s->send_cands);
  free(s->owners);
  free(s->scratch_ids);
  steerd_checkpointer_destroy(s->ckpt);
  free(s->restored);
  free(s->ckpt_owners);
  sodium_memzero(s->cfg.secret, sizeof(s->cfg.secret));
  sodium_memzero(&s->auth, sizeof(s->auth));
  free(s);
}

uint16_t steerd_server_port(const steerd_server *s) { return s->host ? s->host->address.port : 0; }

void steerd_server_get_stats(const steerd_server *s, steerd_server_stats *out) {
  *out = s->stats;
  const steer_map *m = steer_world_map(s->world);
  out->stuck_events = steer_world_stuck_count(s->world);
  out->map_obstacles = steer_map_count(m);
  out->map_version = steer_map_version(m);
  out->commands_run = s->cmdsched.run;
  out->command_wait_ns_total = s->cmdsched.wait_ns_sum;
  out->command_wait_ns_max = s->cmdsched.wait_ns_max;
  out->commands_queued = commands_waiting(s);
}

void steerd_server_checkpoint_stats(const steerd_server *s, steerd_checkpoint_stats *out) {
  if (s->ckpt)
    steerd_checkpointer_stats(s->ckpt, out);
  else
    memset(out, 0, sizeof(*out));
}

void steerd_server_checkpoint(steerd_server *s, const char *why) {
  if (!s->ckpt) {
    LOG_WARN("%s: no checkpoint, the server has no state file (--state)", why);
    return;
  }
  if (s->stopping)
    return; /* the shutdown checkpoint is being made */
  s->ckpt_requested = why;
  if (checkpoint(s, why, 0) == STEERD_CHECKPOINT_EBUSY)
    LOG_INFO("%s: a checkpoint is being written; another follows when it is done", why);
  else
    s->ckpt_requested = NULL;
}

/* ---- for the HTTP side ----------------------------------------------------- */

void steerd_server_get_health(const steerd_server *s, steerd_server_health *out) {
  out->bound = s->host != NULL && s->handles_open > 0;
  out->restored = s->world != NULL && s->start_ns != 0;
  out->draining = s->stopping;
  out->last_tick_ns = s->last_tick_ns ? s->last_tick_ns : s->start_ns;
  out->tick_period_ns = 1000000000ull / s->cfg.tick_rate;
}

void steerd_server_clients_by_role(const steerd_server *s, uint32_t out[STEERD_ROLE_COUNT + 1]) {
  memset(out, 0, sizeof(uint32_t) * (STEERD_ROLE_COUNT + 1));
  for (uint32_t i = 0; i < s->cfg.max_clients; i++) {
    const client *c = &s->clients[i];
    if (!c->peer)
      continue;
    if (c->welcomed && c->role >= 0 && c->role < STEERD_ROLE_COUNT)
      out[c->role]++;
    else
      out[STEERD_ROLE_COUNT]++;
  }
  out[STEERD_ROLE_COUNT] += s->stats.pending; /* the pending pool */
}

const steer_world *steerd_server_world(const steerd_server *s) { return s->world; }
const steer_planner *steerd_server_planner(const steerd_server *s) { return s->planner; }

uint32_t steerd_server_warming(steerd_server *s) {
  if (!s->warming)
    return 0;
  s->warming = steer_planner_warming(s->planner);
  if (!s->warming)
    LOG_INFO("GOTO: the navigation graphs of the radius classes in use are built (%.0f ms, off the loop)",
             (double)(uv_hrtime() - s->warm_start_ns) / 1e6);
  return s->warming;
}
const steerd_config *steerd_server_config(const steerd_server *s) { return &s->cfg; }
uint64_t steerd_server_time_us(const steerd_server *s) { return server_time_us(s); }

void steerd_server_delta_frames(const steerd_server *s, uint64_t *frames, uint64_t *without_baseline) {
  steerd_netcode_stats ns;
  steerd_netcode_get_stats(s->netcode, &ns);
  *frames = ns.frames;
  *without_baseline = ns.frames_full;
}

void steerd_server_set_observer(steerd_server *s, const steerd_server_observer *o) {
  if (o)
    s->observer = *o;
  else
    memset(&s->observer, 0, sizeof(s->observer));
}
