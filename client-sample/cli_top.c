/* cli_top.c: steerd-client top: a live summary of the world, redrawn every
 * interval, for a developer watching a server from a terminal: the tick, the
 * agents in motion, the snapshots' rate and spacing, what arrives per second,
 * the round trip, the events by kind and the agents last STUCK or
 * UNREACHABLE. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define TOP_GAPS     512 /* snapshot intervals kept per period for the percentile */
#define TOP_TROUBLE  5   /* agents last STUCK or UNREACHABLE shown */
#define TOP_MOVING_M 0.05f

/* What one period (between two summaries) saw; the newest frame's agents. */
static struct {
  uint64_t tick, server_time_us;
  uint32_t agents, moving;
  double speed_sum, speed_max;
  uint64_t frames, last_frame_us;
  uint32_t gaps_us[TOP_GAPS], ngaps;
  uint64_t events[PROTO_EVENT_COUNT];
  struct {
    proto_id agent;
    uint32_t code;
    uint64_t tick;
  } trouble[TOP_TROUBLE]; /* newest first */
  uint32_t ntrouble;
} g_top;

static void top_on_frame(void *user, const steerd_client_frame *f) {
  (void)user;
  uint64_t now = steerd_client_now_us();
  if (g_top.last_frame_us != 0 && g_top.ngaps < TOP_GAPS)
    g_top.gaps_us[g_top.ngaps++] = (uint32_t)(now - g_top.last_frame_us);
  g_top.last_frame_us = now;
  g_top.frames++;
  g_top.tick = f->tick;
  g_top.server_time_us = f->server_time_us;
  g_top.agents = f->count;
  g_top.moving = 0;
  g_top.speed_sum = g_top.speed_max = 0.0;
  for (uint32_t i = 0; i < f->count; i++) {
    double v = hypot(f->poses[i].vx, f->poses[i].vy);
    g_top.moving += v > TOP_MOVING_M;
    g_top.speed_sum += v;
    if (v > g_top.speed_max)
      g_top.speed_max = v;
  }
}

static void top_on_event(void *user, const proto_event *e) {
  (void)user;
  if (e->code < PROTO_EVENT_COUNT)
    g_top.events[e->code]++;
  if (e->code != PROTO_EVENT_STUCK && e->code != PROTO_EVENT_UNREACHABLE)
    return;
  uint32_t keep = g_top.ntrouble < TOP_TROUBLE ? g_top.ntrouble : TOP_TROUBLE - 1;
  memmove(&g_top.trouble[1], &g_top.trouble[0], keep * sizeof g_top.trouble[0]);
  g_top.trouble[0].agent = e->agent;
  g_top.trouble[0].code = e->code;
  g_top.trouble[0].tick = e->tick;
  g_top.ntrouble = keep + 1;
}

static int compare_u32(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  return (a > b) - (a < b);
}

/* One summary of the period of `seconds`; rtt_us 0: the PING went unanswered. */
static void print_summary(FILE *f, const proto_welcome *w, double seconds, uint64_t bytes, uint64_t rtt_us) {
  fprintf(f, "tick %llu · %u Hz · server time %.1f s · rtt ", (unsigned long long)g_top.tick,
          (unsigned)w->tick_rate, (double)g_top.server_time_us / 1e6);
  if (rtt_us)
    fprintf(f, "%.2f ms\n", (double)rtt_us / 1000.0);
  else
    fputs("none (no PING reply)\n", f);
  fprintf(f, "agents %u: %u moving, %u at rest · speed mean %.2f m/s, max %.2f m/s\n", (unsigned)g_top.agents,
          (unsigned)g_top.moving, (unsigned)(g_top.agents - g_top.moving),
          g_top.agents ? g_top.speed_sum / g_top.agents : 0.0, g_top.speed_max);
  qsort(g_top.gaps_us, g_top.ngaps, sizeof g_top.gaps_us[0], compare_u32);
  fprintf(f, "snapshots %.1f/s · interval p50 %.0f ms, max %.0f ms · %.1f KB/s received\n",
          (double)g_top.frames / seconds, g_top.ngaps ? g_top.gaps_us[g_top.ngaps / 2] / 1000.0 : 0.0,
          g_top.ngaps ? g_top.gaps_us[g_top.ngaps - 1] / 1000.0 : 0.0, (double)bytes / 1024.0 / seconds);
  fputs("events/s", f);
  for (uint32_t k = 0; k < PROTO_EVENT_COUNT; k++)
    fprintf(f, "%s %s %.1f", k ? "," : "", proto_event_name(k), (double)g_top.events[k] / seconds);
  fputs("\nstuck or unreachable lately:", f);
  if (g_top.ntrouble == 0)
    fputs(" none", f);
  for (uint32_t i = 0; i < g_top.ntrouble; i++)
    fprintf(f, "%s agent %lu %s at tick %llu", i ? "," : "", (unsigned long)g_top.trouble[i].agent,
            proto_event_name(g_top.trouble[i].code), (unsigned long long)g_top.trouble[i].tick);
  fputc('\n', f);
}

int cmd_top(const args *a) {
  static const char *const allowed[] = {"seconds", "interval", NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  float seconds = 0.0f, interval = 1.0f;
  int bad = opt_float(a, "seconds", 0.0f, FLT_MAX, "--seconds", &seconds);
  if (bad || (bad = opt_float(a, "interval", 0.1f, 3600.0f, "--interval (0.1 to 3600 s)", &interval)) != 0)
    return bad;
  memset(&g_top, 0, sizeof g_top);
  steerd_client_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.on_snapshot_frame = top_on_frame;
  cb.on_event = top_on_event;
  int code = 0;
  steerd_client *c = open_client(a, &cb, &code);
  if (c == NULL)
    return code;
  int tty = isatty(STDOUT_FILENO);
  uint64_t start = steerd_client_now_us(), period_start = start;
  uint64_t end = seconds > 0.0f ? start + (uint64_t)((double)seconds * 1e6) : UINT64_MAX;
  uint64_t period_us = (uint64_t)((double)interval * 1e6), next = start + period_us;
  steerd_client_stats st;
  steerd_client_get_stats(c, &st);
  uint64_t bytes0 = st.bytes_received;
  int r = 0, printed = 0;
  while (!g_stop && r >= 0) {
    uint64_t now = steerd_client_now_us();
    if (now >= next) {
      uint64_t rtt = 0;
      r = steerd_client_ping(c, a->timeout_ms, &rtt);
      if (r < 0 && r != STEERD_CLIENT_ETIMEDOUT)
        break;
      r = 0;
      now = steerd_client_now_us();
      steerd_client_get_stats(c, &st);
      if (tty)
        fputs("\033[H\033[2J", stdout); /* redrawn in place */
      else if (printed)
        fputc('\n', stdout);
      print_summary(stdout, steerd_client_welcome(c), (double)(now - period_start) / 1e6,
                    st.bytes_received - bytes0, rtt);
      fflush(stdout);
      printed++;
      bytes0 = st.bytes_received;
      period_start = now;
      next += period_us;
      if (next <= now)
        next = now + period_us; /* a long PING wait: the next period starts now */
      g_top.frames = 0;
      g_top.ngaps = 0;
      memset(g_top.events, 0, sizeof g_top.events);
    }
    if (now >= end)
      break;
    uint64_t wake = next < end ? next : end;
    r = steerd_client_service(c, (uint32_t)((wake - now) / 1000u) + 1u);
  }
  if (r < 0)
    code = report(c, "top", r, NULL);
  close_client(c);
  return code;
}
