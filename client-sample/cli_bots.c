/* cli_bots.c: steerd-client bots: load-test connections issuing random valid
 * commands, then a summary per bot. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "randcmd.h"

#define BOT_MAX        256 /* bots in one process: one poll() set, modest memory */
#define BOT_AGENTS     4   /* agents each bot keeps alive */
#define BOT_MAX_AGENTS 16
#define BOT_PENDING    16 /* spawns in flight per bot */
#define BOT_FLIGHT     64 /* commands timed per bot, from send to reply */

/* ---- Timings ---------------------------------------------------------------- */

/* Durations of one kind in microseconds, every one kept for the percentiles
 * (a bot sends a few commands a second and sees 20 snapshots: megabytes only
 * for runs of hours, so past BOT_SAMPLES_MAX they are counted, not kept). */
#define BOT_SAMPLES_MAX (1u << 24)
typedef struct samples {
  uint32_t *v;
  uint32_t n, cap;
  uint64_t untimed; /* not kept: the cap, no memory, or the send time lost */
} samples;

static samples g_reply;    /* a command's send to its ACK or ERROR */
static samples g_interval; /* one complete snapshot frame to the next, per bot */
static int g_timing;       /* 1 while the bots act: the tidy-up's despawns are not the load */

static void sample_add(samples *s, uint64_t us) {
  if (s->n == s->cap) {
    uint32_t cap = s->cap ? 2u * s->cap : 4096u;
    uint32_t *v = cap <= BOT_SAMPLES_MAX ? realloc(s->v, (size_t)cap * sizeof *v) : NULL;
    if (v == NULL) {
      s->untimed++;
      return;
    }
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* One line: the count, then p50, p90, p99 and the maximum in milliseconds
 * (nearest rank, of the sorted samples). */
static void samples_print(samples *s, const char *what) {
  printf("%-24s %8u", what, (unsigned)s->n);
  if (s->n == 0) {
    printf("%10s %10s %10s %10s\n", "-", "-", "-", "-");
    return;
  }
  qsort(s->v, s->n, sizeof *s->v, cmp_u32);
  static const double ranks[] = {0.50, 0.90, 0.99};
  for (size_t k = 0; k < sizeof ranks / sizeof ranks[0]; k++) {
    uint32_t i = (uint32_t)(ranks[k] * (double)s->n + 0.999999);
    printf(" %10.3f", (double)s->v[(i > 0 ? i : 1u) - 1u] / 1000.0);
  }
  printf(" %10.3f\n", (double)s->v[s->n - 1u] / 1000.0);
}

static void samples_free(samples *s) {
  free(s->v);
  memset(s, 0, sizeof *s);
}

/* ---- Bots ------------------------------------------------------------------ */

typedef struct bot {
  steerd_client *c;
  int index;
  int lost; /* connect failed or the server dropped us */
  uint64_t rng;
  uint64_t next_action_us;
  uint32_t n_agents;
  proto_id agents[BOT_MAX_AGENTS];
  uint8_t models[BOT_MAX_AGENTS];
  uint32_t n_pending;
  uint32_t pending_id[BOT_PENDING];
  uint8_t pending_model[BOT_PENDING];
  uint64_t sent;
  uint32_t n_flight; /* commands sent and not answered, with their send times */
  uint32_t flight_id[BOT_FLIGHT];
  uint64_t flight_us[BOT_FLIGHT];
  uint64_t last_frame_us;                       /* 0: no frame yet */
  uint32_t tries;                               /* connection attempts (BOT_TRIES at most) */
  uint64_t errors_by_code[PROTO_ERR_COUNT + 1]; /* last slot: codes out of range */
  proto_vec2 lo, hi;                            /* m, where to put points */
} bot;

static uint64_t g_errors_printed;

static proto_vec2 bot_point(bot *b) { return steerd_rand_point(&b->rng, b->lo, b->hi); }

/* Reports the bot's failure (the first few; a full server fails many alike). */
static void bot_lost(bot *b, const char *what, int r) {
  static int printed;
  b->lost = 1;
  if (printed++ < 10) {
    char buf[64];
    snprintf(buf, sizeof buf, "bot %d: %s", b->index, what);
    report(b->c, buf, r, NULL);
  }
}

/* Connection attempts per bot: a busy server (many bots at once, or an
 * unoptimised build) may let a handshake time out that the next one makes. */
#define BOT_TRIES 3

static void bot_on_reply(void *user, const proto_server_msg *m);
static void bot_on_frame(void *user, const steerd_client_frame *f);

/* Starts (or starts again) bot b's connection: 0, or the client's error. */
static int bot_connect(bot *b, const args *a) {
  char name[32];
  snprintf(name, sizeof name, "%s-bot-%d", strlen(a->name) > 20 ? "steerd" : a->name, b->index);
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = name;
  cfg.token = a->token;
  cfg.connect_timeout_ms = a->timeout_ms;
  cfg.snapshots = a->delta ? PROTO_SNAPSHOTS_DELTA : PROTO_SNAPSHOTS_FULL;
  cfg.callbacks.on_reply = bot_on_reply;
  cfg.callbacks.on_snapshot_frame = bot_on_frame;
  cfg.user = b;
  steerd_client_destroy(b->c);
  b->tries++;
  b->c = steerd_client_create(&cfg);
  return b->c != NULL ? steerd_client_connect_start(b->c, a->host, a->port) : STEERD_CLIENT_ENOMEM;
}

/* Sends cmd, timed while the bots act: 0, or the client's error. */
static int bot_send(bot *b, const proto_command *cmd, uint32_t *id) {
  int r = steerd_client_send(b->c, cmd, id);
  if (r != 0)
    return r;
  b->sent++;
  if (!g_timing)
    return 0;
  if (b->n_flight == BOT_FLIGHT) { /* a server this far behind: the oldest goes untimed */
    memmove(b->flight_id, b->flight_id + 1, (BOT_FLIGHT - 1u) * sizeof *b->flight_id);
    memmove(b->flight_us, b->flight_us + 1, (BOT_FLIGHT - 1u) * sizeof *b->flight_us);
    b->n_flight--;
    g_reply.untimed++;
  }
  b->flight_id[b->n_flight] = *id;
  b->flight_us[b->n_flight] = steerd_client_now_us();
  b->n_flight++;
  return 0;
}

/* The reply to request id came: its time from the send, if it was timed. */
static void bot_replied(bot *b, uint32_t id) {
  for (uint32_t i = 0; i < b->n_flight; i++) {
    if (b->flight_id[i] != id)
      continue;
    sample_add(&g_reply, steerd_client_now_us() - b->flight_us[i]);
    b->n_flight--;
    memmove(b->flight_id + i, b->flight_id + i + 1, (b->n_flight - i) * sizeof *b->flight_id);
    memmove(b->flight_us + i, b->flight_us + i + 1, (b->n_flight - i) * sizeof *b->flight_us);
    return;
  }
}

static void bot_on_frame(void *user, const steerd_client_frame *f) {
  (void)f;
  bot *b = user;
  uint64_t now = steerd_client_now_us();
  if (g_timing && b->last_frame_us != 0)
    sample_add(&g_interval, now - b->last_frame_us);
  b->last_frame_us = now;
}

static void bot_on_reply(void *user, const proto_server_msg *m) {
  bot *b = user;
  bot_replied(b, m->type == PROTO_MSG_ERROR ? m->error.request_id : m->ack.request_id);
  if (m->type == PROTO_MSG_ERROR) {
    uint32_t code = m->error.code < PROTO_ERR_COUNT ? m->error.code : PROTO_ERR_COUNT;
    b->errors_by_code[code]++;
    if (g_errors_printed++ < 10) {
      fprintf(stderr, "bot %d: request %lu: ", b->index, (unsigned long)m->error.request_id);
      print_server_error(&m->error);
    }
    for (uint32_t i = 0; i < b->n_pending; i++)
      if (b->pending_id[i] == m->error.request_id)
        b->pending_id[i] = b->pending_id[--b->n_pending];
    return;
  }
  if (m->ack.command != PROTO_MSG_SPAWN)
    return;
  for (uint32_t i = 0; i < b->n_pending; i++) {
    if (b->pending_id[i] != m->ack.request_id)
      continue;
    if (b->n_agents < BOT_MAX_AGENTS) {
      b->agents[b->n_agents] = m->ack.agent;
      b->models[b->n_agents] = b->pending_model[i];
      b->n_agents++;
    }
    b->n_pending--;
    b->pending_id[i] = b->pending_id[b->n_pending];
    b->pending_model[i] = b->pending_model[b->n_pending];
    return;
  }
}

/* A behaviour for the bot's agent in slot self (UINT32_MAX: a spawn). The bot's
 * own agents are alive at the server when the command arrives: despawns go
 * down the same ordered channel. */
static void bot_behaviour(bot *b, uint32_t self, uint8_t model, proto_behaviour *out) {
  steerd_rand_behaviour(&b->rng, b->lo, b->hi, b->agents, b->n_agents, self, model, out);
}

static void bot_act(bot *b) {
  static proto_command cmd; /* one bot acts at a time; too large for the stack */
  memset(&cmd, 0, sizeof cmd);
  uint32_t id;
  if (b->n_agents + b->n_pending < BOT_AGENTS) {
    if (b->n_pending >= BOT_PENDING)
      return;
    cmd.type = PROTO_MSG_SPAWN;
    cmd.spawn.model = (uint8_t)steerd_rand_below(&b->rng, PROTO_MODEL_COUNT);
    cmd.spawn.position = bot_point(b);
    bot_behaviour(b, UINT32_MAX, cmd.spawn.model, &cmd.spawn.behaviour);
    if (cmd.spawn.behaviour.present & PROTO_BHV_TARGET_AGENT) {
      cmd.spawn.behaviour.kind = PROTO_BEHAVIOUR_WANDER; /* spawns get no agent targets */
      cmd.spawn.behaviour.present = 0;
    }
    cmd.spawn.present = PROTO_SPAWN_BEHAVIOUR;
    if (bot_send(b, &cmd, &id) == 0) {
      b->pending_id[b->n_pending] = id;
      b->pending_model[b->n_pending] = cmd.spawn.model;
      b->n_pending++;
    }
    return;
  }
  if (b->n_agents == 0)
    return;
  uint32_t slot = steerd_rand_below(&b->rng, b->n_agents);
  proto_id agent = b->agents[slot];
  uint8_t model = b->models[slot];
  uint32_t pick = steerd_rand_below(&b->rng, 10);
  if (pick < 4) {
    cmd.type = PROTO_MSG_SET_BEHAVIOUR;
    cmd.set_behaviour.agent = agent;
    bot_behaviour(b, slot, model, &cmd.set_behaviour.behaviour);
  } else if (pick < 6) {
    cmd.type = PROTO_MSG_SET_PATH;
    cmd.set_path.agent = agent;
    steerd_rand_path(&b->rng, b->lo, b->hi, 6, model, &cmd.set_path.path);
  } else if (pick == 6) {
    cmd.type = PROTO_MSG_STOP;
    cmd.stop.agent = agent;
  } else if (pick == 7) {
    cmd.type = PROTO_MSG_QUERY;
    cmd.query.agent = agent;
  } else if (pick == 8) {
    cmd.type = PROTO_MSG_PING;
  } else {
    cmd.type = PROTO_MSG_DESPAWN;
    cmd.despawn.agent = agent;
    /* Forget it now, so nothing later targets it; a new one spawns next turn. */
    b->n_agents--;
    b->agents[slot] = b->agents[b->n_agents];
    b->models[slot] = b->models[b->n_agents];
  }
  bot_send(b, &cmd, &id);
}

/* The bots leave the world as they found it: each despawns the agents it still owns (anonymous
 * owners never come back for them, so under --orphan-policy keep they would stay for good),
 * spawns still in flight included, and waits up to timeout_ms for every answer. */
static void bots_tidy(bot *bots, uint32_t n, uint32_t timeout_ms) {
  static proto_command cmd;
  uint64_t end = steerd_client_now_us() + (uint64_t)timeout_ms * 1000u;
  uint64_t despawned = 0;
  uint32_t waiting = 0;
  for (;;) {
    waiting = 0;
    for (uint32_t i = 0; i < n; i++) {
      bot *b = &bots[i];
      if (b->lost)
        continue;
      while (b->n_agents > 0) {
        memset(&cmd, 0, sizeof cmd);
        cmd.type = PROTO_MSG_DESPAWN;
        cmd.despawn.agent = b->agents[--b->n_agents];
        uint32_t id;
        if (bot_send(b, &cmd, &id) == 0)
          despawned++;
      }
      if (steerd_client_service(b->c, 0) < 0) {
        b->lost = 1;
        continue;
      }
      steerd_client_stats st;
      memset(&st, 0, sizeof st);
      steerd_client_get_stats(b->c, &st);
      if (b->n_pending > 0 || b->n_agents > 0 || st.acks + st.errors < b->sent)
        waiting++;
    }
    if (waiting == 0 || g_stop || steerd_client_now_us() >= end)
      break;
    poll(NULL, 0, 5);
  }
  fprintf(stderr, "steerd-client bots: despawned the bots' %llu agents on the way out",
          (unsigned long long)despawned);
  if (waiting > 0)
    fprintf(stderr, " (%u bots still waited for answers after %u ms)", (unsigned)waiting,
            (unsigned)timeout_ms);
  fputc('\n', stderr);
}

/* Connects every bot at once (a blocking connect per bot would leave the
 * connected ones unserviced long enough for the server to time them out),
 * then places each one's points inside the world and spreads their first
 * actions over one period. The bots lost. */
static int bots_connect(bot *bots, struct pollfd *fds, uint32_t n, const args *a, uint64_t seed,
                        uint64_t period_us) {
  int lost = 0;
  for (uint32_t i = 0; i < n; i++) {
    bot *b = &bots[i];
    b->index = (int)i;
    b->rng = seed * 0x100000001B3ull + i;
    int r = bot_connect(b, a);
    if (r < 0) {
      bot_lost(b, "connect", r);
      lost++;
    }
  }
  for (int connecting = 1; connecting && !g_stop;) {
    connecting = 0;
    nfds_t nfds = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (bots[i].lost || steerd_client_get_state(bots[i].c) != STEERD_CLIENT_CONNECTING)
        continue;
      fds[nfds].fd = steerd_client_fd(bots[i].c);
      fds[nfds].events = POLLIN;
      fds[nfds].revents = 0;
      nfds++;
    }
    if (nfds == 0)
      break;
    if (poll(fds, nfds, 20) < 0 && errno != EINTR)
      break;
    for (uint32_t i = 0; i < n; i++) {
      bot *b = &bots[i];
      if (b->lost || steerd_client_get_state(b->c) != STEERD_CLIENT_CONNECTING)
        continue;
      int r = steerd_client_service(b->c, 0);
      if (r == STEERD_CLIENT_ETIMEDOUT && b->tries < BOT_TRIES)
        r = bot_connect(b, a); /* once more */
      if (r < 0) {
        bot_lost(b, "connect", r);
        lost++;
      } else if (steerd_client_get_state(b->c) == STEERD_CLIENT_CONNECTING) {
        connecting = 1;
      }
    }
  }
  for (uint32_t i = 0; i < n; i++) {
    bot *b = &bots[i];
    if (b->lost)
      continue;
    const proto_welcome *w = steerd_client_welcome(b->c);
    if (w == NULL) { /* interrupted while connecting */
      b->lost = 1;
      lost++;
      continue;
    }
    /* Keep points 10% inside the world bounds. */
    float mx = (w->world_max.x - w->world_min.x) * 0.1f, my = (w->world_max.y - w->world_min.y) * 0.1f;
    b->lo = (proto_vec2){w->world_min.x + mx, w->world_min.y + my};
    b->hi = (proto_vec2){w->world_max.x - mx, w->world_max.y - my};
    b->next_action_us = steerd_client_now_us() + steerd_rand_below(&b->rng, (uint32_t)period_us + 1u);
  }
  return lost;
}

/* Each bot acts every 0.5..1.5 periods until end (or Ctrl-C), every bot
 * serviced meanwhile. The bots lost. */
static int bots_run(bot *bots, struct pollfd *fds, uint32_t n, uint64_t period_us, uint64_t end) {
  int lost = 0;
  for (uint64_t now = steerd_client_now_us(); now < end && !g_stop; now = steerd_client_now_us()) {
    uint64_t wake = end;
    nfds_t nfds = 0;
    for (uint32_t i = 0; i < n; i++) {
      bot *b = &bots[i];
      if (b->lost)
        continue;
      if (now >= b->next_action_us) {
        bot_act(b);
        /* Jitter so the bots do not fire in lockstep. */
        b->next_action_us = now + period_us / 2u + steerd_rand_below(&b->rng, (uint32_t)period_us + 1u);
      }
      if (b->next_action_us < wake)
        wake = b->next_action_us;
      fds[nfds].fd = steerd_client_fd(b->c);
      fds[nfds].events = POLLIN;
      fds[nfds].revents = 0;
      nfds++;
    }
    if (nfds == 0)
      break;
    /* ENet needs servicing for resends and acks even when nothing arrives:
     * wake at least every 20 ms. */
    now = steerd_client_now_us();
    uint64_t wait_ms = wake > now ? (wake - now + 999u) / 1000u : 0;
    if (wait_ms > 20)
      wait_ms = 20;
    if (poll(fds, nfds, (int)wait_ms) < 0 && errno != EINTR)
      break;
    for (uint32_t i = 0; i < n; i++) {
      bot *b = &bots[i];
      if (b->lost)
        continue;
      int r = steerd_client_service(b->c, 0);
      if (r < 0) {
        bot_lost(b, "service", r);
        lost++;
      }
    }
  }
  return lost;
}

/* The table of every bot's figures and the totals; the errors by code on
 * stderr. The number of ERROR replies. */
static uint64_t bots_summary(const bot *bots, uint32_t n, double connect_s, double elapsed, int lost) {
  printf("%-5s %8s %8s %8s %8s %10s %8s %12s\n", "bot", "sent", "acks", "errors", "frames", "incomplete",
         "pings", "mean_rtt_ms");
  uint64_t tot_sent = 0, tot_acks = 0, tot_err = 0, tot_frames = 0, tot_inc = 0, tot_pings = 0, tot_rtt = 0;
  uint64_t by_code[PROTO_ERR_COUNT + 1] = {0};
  for (uint32_t i = 0; i < n; i++) {
    const bot *b = &bots[i];
    steerd_client_stats st;
    memset(&st, 0, sizeof st);
    steerd_client_get_stats(b->c, &st);
    double mean = st.pings ? (double)st.rtt_sum_us / (double)st.pings / 1000.0 : 0.0;
    printf("%-5u %8llu %8llu %8llu %8llu %10llu %8llu %12.3f%s\n", (unsigned)i, (unsigned long long)b->sent,
           (unsigned long long)st.acks, (unsigned long long)st.errors, (unsigned long long)st.frames_complete,
           (unsigned long long)st.frames_incomplete, (unsigned long long)st.pings, mean,
           b->lost ? "  LOST" : "");
    tot_sent += b->sent;
    tot_acks += st.acks;
    tot_err += st.errors;
    tot_frames += st.frames_complete;
    tot_inc += st.frames_incomplete;
    tot_pings += st.pings;
    tot_rtt += st.rtt_sum_us;
    for (uint32_t k = 0; k <= PROTO_ERR_COUNT; k++)
      by_code[k] += b->errors_by_code[k];
  }
  printf("%-5s %8llu %8llu %8llu %8llu %10llu %8llu %12.3f\n", "all", (unsigned long long)tot_sent,
         (unsigned long long)tot_acks, (unsigned long long)tot_err, (unsigned long long)tot_frames,
         (unsigned long long)tot_inc, (unsigned long long)tot_pings,
         tot_pings ? (double)tot_rtt / (double)tot_pings / 1000.0 : 0.0);
  printf("%u bots (connected in %.3f s), %.1f s, %.1f commands/s, %u lost\n", (unsigned)n, connect_s, elapsed,
         elapsed > 0 ? (double)tot_sent / elapsed : 0.0, (unsigned)lost);
  printf("%-24s %8s %10s %10s %10s %10s\n", "timing (ms)", "count", "p50", "p90", "p99", "max");
  samples_print(&g_reply, "command to reply");
  samples_print(&g_interval, "snapshot interval");
  if (g_reply.untimed + g_interval.untimed > 0)
    printf("untimed: %llu replies, %llu intervals\n", (unsigned long long)g_reply.untimed,
           (unsigned long long)g_interval.untimed);
  for (uint32_t k = 0; k <= PROTO_ERR_COUNT; k++)
    if (by_code[k] != 0)
      fprintf(stderr, "steerd-client: %llu x %s\n", (unsigned long long)by_code[k],
              k < PROTO_ERR_COUNT ? proto_error_name((int)k) : "UNKNOWN");
  return tot_err;
}

int cmd_bots(const args *a) {
  static const char *const allowed[] = {"seconds", "seed", "rate", NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  uint32_t n;
  if (parse_u32(a->pos[0], &n) != 0 || n == 0 || n > BOT_MAX)
    return bad_value(a, "bot count (1..256)", a->pos[0]);
  float seconds = 10.0f, rate = 4.0f;
  uint64_t seed = 1;
  const char *ss = opt_get(a, "seconds"), *ks = opt_get(a, "seed"), *rs = opt_get(a, "rate");
  if (ss != NULL && (parse_float(ss, &seconds) != 0 || !(seconds > 0.0f) || seconds > 86400.0f))
    return bad_value(a, "--seconds", ss);
  if (ks != NULL && parse_u64(ks, UINT64_MAX, &seed) != 0)
    return bad_value(a, "--seed", ks);
  if (rs != NULL && (parse_float(rs, &rate) != 0 || !(rate > 0.0f) || rate > 1000.0f))
    return bad_value(a, "--rate", rs);

  bot *bots = calloc(n, sizeof *bots);
  struct pollfd *fds = calloc(n, sizeof *fds);
  if (bots == NULL || fds == NULL) {
    free(bots);
    free(fds);
    return EXIT_CONNECTION;
  }
  uint64_t period_us = (uint64_t)(1e6 / (double)rate);
  uint64_t t0 = steerd_client_now_us();
  int lost = bots_connect(bots, fds, n, a, seed, period_us);
  uint64_t start = steerd_client_now_us();
  g_timing = 1;
  lost += bots_run(bots, fds, n, period_us, start + (uint64_t)((double)seconds * 1e6));
  double elapsed = (double)(steerd_client_now_us() - start) / 1e6;
  /* Let the last replies arrive before counting. */
  for (uint32_t i = 0; i < n; i++)
    if (!bots[i].lost)
      steerd_client_service(bots[i].c, 0);
  g_timing = 0;
  uint64_t errors = bots_summary(bots, n, (double)(start - t0) / 1e6, elapsed, lost);
  bots_tidy(bots, n, a->timeout_ms);
  /* destroy disconnects at once (no wait for the server's confirmation): a
   * polite disconnect per bot would take up to its timeout each. */
  for (uint32_t i = 0; i < n; i++)
    steerd_client_destroy(bots[i].c);
  free(bots);
  free(fds);
  samples_free(&g_reply);
  samples_free(&g_interval);
  if (lost > 0)
    return EXIT_CONNECTION;
  return errors > 0 ? EXIT_REPLY_ERROR : 0;
}
