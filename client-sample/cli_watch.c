/* cli_watch.c: steerd-client watch: snapshots and events as JSON lines, or
 * interpolated states, for a while. */
#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "interp.h"

/* ---- watch --------------------------------------------------------------- */

/* watch --view: "all", "X,Y,R" or "follow:ID,R" (R in metres, > 0). Checked
 * before connecting; --view needs --delta (full snapshots always hold every
 * agent, the server ACKs a VIEW and ignores it). Returns 0 or an exit code. */
static int parse_view(const args *a, proto_view *v, int *has_view) {
  const char *s = opt_get(a, "view");
  *has_view = s != NULL;
  memset(v, 0, sizeof *v);
  if (s == NULL)
    return 0;
  if (!a->delta) {
    fprintf(stderr,
            "steerd-client %s: --view needs --delta (or STEERD_DELTA=1): full snapshots always "
            "hold every agent\n",
            a->cmd);
    return EXIT_USAGE;
  }
  if (strcmp(s, "all") == 0) {
    v->kind = PROTO_VIEW_ALL;
    return 0;
  }
  char tmp[128];
  size_t n = strlen(s);
  if (n >= sizeof tmp)
    return bad_value(a, "--view", s);
  memcpy(tmp, s, n + 1);
  char *radius = strrchr(tmp, ',');
  if (radius == NULL)
    return bad_value(a, "--view (all, X,Y,R or follow:ID,R)", s);
  *radius++ = '\0';
  while (*radius == ' ')
    radius++;
  if (parse_float(radius, &v->radius) != 0 || !(v->radius > 0.0f))
    return bad_value(a, "--view radius", radius);
  if (strncmp(tmp, "follow:", 7) == 0) {
    uint32_t id;
    if (parse_u32(tmp + 7, &id) != 0 || id == 0)
      return bad_value(a, "--view agent id", tmp + 7);
    v->kind = PROTO_VIEW_FOLLOW;
    v->follow = id;
    return 0;
  }
  if (parse_xy(tmp, &v->centre) != 0)
    return bad_value(a, "--view (all, X,Y,R or follow:ID,R)", s);
  v->kind = PROTO_VIEW_CENTRE;
  return 0;
}

/* Sends the VIEW and waits for its ACK (frames arriving meanwhile go to the
 * callbacks). Returns 0 or an exit code. */
static int send_view(steerd_client *c, const args *a, const proto_view *v) {
  static proto_command cmd; /* large (paths): not on the stack */
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_VIEW;
  cmd.view = *v;
  proto_server_msg reply;
  int r = steerd_client_command_wait(c, &cmd, a->timeout_ms, &reply);
  return r < 0 ? report(c, "VIEW", r, &reply) : 0;
}

static void print_view(FILE *f, const proto_view *v) {
  if (v->kind == PROTO_VIEW_CENTRE)
    fprintf(f, "view %g m around (%g, %g)", (double)v->radius, (double)v->centre.x, (double)v->centre.y);
  else if (v->kind == PROTO_VIEW_FOLLOW)
    fprintf(f, "view %g m around agent %lu", (double)v->radius, (unsigned long)v->follow);
  else
    fputs("view all", f);
}

/* The delta figures of the summary (--delta only). */
static void print_delta_stats(const steerd_client *c) {
  steerd_client_stats st;
  steerd_client_get_stats(c, &st);
  fprintf(stderr,
          "steerd-client: delta: %llu bytes received (%llu in %llu DELTA parts, %.0f per frame); %llu frames "
          "rebuilt, %llu dropped without baseline, %llu bad; %llu acks sent\n",
          (unsigned long long)st.bytes_received, (unsigned long long)st.snapshot_bytes,
          (unsigned long long)st.snapshot_parts,
          st.frames_complete ? (double)st.snapshot_bytes / (double)st.frames_complete : 0.0,
          (unsigned long long)st.frames_complete, (unsigned long long)st.delta_no_base,
          (unsigned long long)st.delta_bad, (unsigned long long)st.delta_acks_sent);
}

/* watch --interp: the snapshots go through the interpolation buffer (interp.h)
 * and the interpolated states are printed at a fixed rate. */
static const char *const interp_mode_names[STEERD_INTERP_MODE_COUNT] = {"interpolate", "extrapolate",
                                                                        "hold_newest", "hold_oldest"};

static steerd_interp *g_interp; /* NULL until the WELCOME gives the snapshot rate */

static void interp_on_frame(void *user, const steerd_client_frame *f) {
  (void)user;
  if (g_interp != NULL)
    steerd_interp_push(g_interp, steerd_client_now_us(), f->tick, f->server_time_us, f->poses, f->count, 1);
}

static void interp_on_event(void *user, const proto_event *e) {
  if (g_interp != NULL && e->code == PROTO_EVENT_DESPAWNED)
    steerd_interp_despawn(g_interp, e->agent, e->tick);
  print_event(user, e);
}

static int cmd_watch_interp(const args *a) {
  static const char *const allowed[] = {"seconds", "rate", "view", NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  proto_view view;
  int has_view;
  int vr = parse_view(a, &view, &has_view);
  if (vr != 0)
    return vr;
  float seconds = 0.0f, rate = 30.0f;
  int bad = opt_float(a, "seconds", 0.0f, FLT_MAX, "--seconds", &seconds);
  if (bad || (bad = opt_float(a, "rate", 1.0f, 1000.0f, "--rate", &rate)) != 0)
    return bad;
  steerd_client_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.on_event = interp_on_event;
  cb.on_snapshot_frame = interp_on_frame;
  int code = 0;
  steerd_client *c = open_client(a, &cb, &code);
  if (c == NULL)
    return code;
  /* Before the buffer exists: it sees only frames of the new view (and a few
   * sent before the server applied it). */
  if (has_view && (code = send_view(c, a, &view)) != 0) {
    close_client(c);
    return code;
  }
  const proto_welcome *w = steerd_client_welcome(c);
  steerd_interp_config icfg = steerd_interp_default_config();
  icfg.max_agents = steerd_client_max_agents(c);
  if (w->snapshot_rate > 0)
    icfg.snapshot_interval_us = 1000000u / w->snapshot_rate;
  steerd_interp *it = steerd_interp_create(&icfg);
  if (it == NULL) {
    close_client(c);
    return EXIT_CONNECTION;
  }
  g_interp = it;
  int r;
  uint64_t period = (uint64_t)(1e6 / (double)rate);
  uint64_t start = steerd_client_now_us();
  uint64_t end = seconds > 0.0f ? start + (uint64_t)((double)seconds * 1e6) : UINT64_MAX;
  uint64_t next = start + period;
  while (!g_stop) {
    uint64_t now = steerd_client_now_us();
    if (now >= end)
      break;
    if (now >= next) {
      next = now - next > period ? now + period : next + period;
      int64_t render;
      if (steerd_interp_advance(it, now, &render) == 0) {
        steerd_interp_stats st;
        steerd_interp_get_stats(it, &st);
        printf("{\"type\":\"interp\",\"render_time_us\":%lld,\"delay_ms\":%.1f,\"agents\":[",
               (long long)render, st.delay_ms);
        for (uint32_t i = 0; i < steerd_interp_count(it); i++) {
          steerd_interp_state s;
          if (steerd_interp_sample(it, steerd_interp_id_at(it, i), &s) != 0)
            continue;
          printf("%s{\"id\":%lu,\"x\":", i ? "," : "", (unsigned long)s.id);
          print_num(stdout, "%.3f", s.x);
          fputs(",\"y\":", stdout);
          print_num(stdout, "%.3f", s.y);
          fputs(",\"theta\":", stdout);
          print_num(stdout, "%.4f", s.theta);
          fputs(",\"vx\":", stdout);
          print_num(stdout, "%.2f", s.vx);
          fputs(",\"vy\":", stdout);
          print_num(stdout, "%.2f", s.vy);
          printf(",\"mode\":\"%s\"}", interp_mode_names[s.mode]);
        }
        fputs("]}\n", stdout);
        fflush(stdout);
      }
      continue;
    }
    uint64_t wait = (next < end ? next : end) - now;
    r = steerd_client_service(c, (uint32_t)((wait + 999u) / 1000u));
    if (r < 0) {
      code = report(c, "watch", r, NULL);
      break;
    }
  }
  steerd_interp_stats st;
  steerd_interp_get_stats(it, &st);
  fprintf(stderr,
          "steerd-client: interp: frames %llu of %llu expected; jitter %.1f ms; delay %.1f ms; snapshot age "
          "mean %.1f max %.1f ms; underruns %llu (%.1f ms); extrapolated samples %llu, held %llu\n",
          (unsigned long long)st.frames, (unsigned long long)st.frames_expected, st.jitter_ms, st.delay_ms,
          st.age_mean_ms, st.age_max_ms, (unsigned long long)st.underruns, st.underrun_ms,
          (unsigned long long)st.samples[STEERD_INTERP_MODE_EXTRAPOLATE],
          (unsigned long long)st.samples[STEERD_INTERP_MODE_HOLD_NEWEST]);
  if (a->delta)
    print_delta_stats(c);
  if (code == 0)
    steerd_client_disconnect(c, 500);
  steerd_client_destroy(c);
  g_interp = NULL;
  steerd_interp_destroy(it);
  return code;
}

int cmd_watch(const args *a) {
  if (a->interp)
    return cmd_watch_interp(a);
  static const char *const allowed[] = {"seconds", "view", NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  float seconds = 0.0f;
  int bad = opt_float(a, "seconds", 0.0f, FLT_MAX, "--seconds", &seconds);
  if (bad)
    return bad;
  proto_view view;
  int has_view;
  int vr = parse_view(a, &view, &has_view);
  if (vr != 0)
    return vr;
  steerd_client_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.on_event = print_event;
  if (!a->events_only)
    cb.on_snapshot_frame = print_frame;
  int code = 0;
  steerd_client *c = open_client(a, &cb, &code);
  if (c == NULL)
    return code;
  const proto_welcome *w = steerd_client_welcome(c);
  fprintf(stderr, "steerd-client: client %lu, tick %lu Hz, snapshots %lu Hz (%s), world [%g,%g]..[%g,%g]",
          (unsigned long)w->client_id, (unsigned long)w->tick_rate, (unsigned long)w->snapshot_rate,
          a->delta ? "delta" : "full", (double)w->world_min.x, (double)w->world_min.y, (double)w->world_max.x,
          (double)w->world_max.y);
  if (has_view) {
    fputs(", ", stderr);
    print_view(stderr, &view);
  }
  fputc('\n', stderr);
  if (has_view && (code = send_view(c, a, &view)) != 0) {
    close_client(c);
    return code;
  }
  uint64_t end = seconds > 0.0f ? steerd_client_now_us() + (uint64_t)((double)seconds * 1e6) : UINT64_MAX;
  while (!g_stop) {
    uint64_t now = steerd_client_now_us();
    if (now >= end)
      break;
    uint64_t left_ms = (end - now + 999u) / 1000u;
    int r = steerd_client_service(c, left_ms < 200 ? (uint32_t)left_ms : 200);
    if (r < 0) {
      code = report(c, "watch", r, NULL);
      break;
    }
  }
  steerd_client_stats st;
  steerd_client_get_stats(c, &st);
  fprintf(stderr,
          "steerd-client: frames %llu complete, %llu incomplete (%llu overflow); %llu parts, %llu dropped; "
          "%llu events; %llu bad packets\n",
          (unsigned long long)st.frames_complete, (unsigned long long)st.frames_incomplete,
          (unsigned long long)st.frames_overflow, (unsigned long long)st.snapshot_parts,
          (unsigned long long)st.parts_dropped, (unsigned long long)st.events,
          (unsigned long long)st.bad_packets);
  if (a->delta)
    print_delta_stats(c);
  if (code == 0)
    steerd_client_disconnect(c, 500);
  steerd_client_destroy(c);
  return code;
}
