/* hello_steerd.c: the smallest useful libsteerd-client program, built against
 * the installed library:
 *
 *   cc hello_steerd.c $(pkg-config --cflags --libs steerd-client) -lm -o hello_steerd
 *   ./hello_steerd [HOST [PORT [TOKEN]]]    (else STEERD_HOST, STEERD_PORT, STEERD_TOKEN)
 *
 * It spawns two agents, sends one to seek a point and the other along a path,
 * then runs a 60 Hz "render loop" for three seconds: update the network, poll
 * the interpolated states, poll the events. It prints where the agents went
 * and exits 0 when both moved towards what they were told (1 otherwise), so
 * the test of the installed library can run it against a real server. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <steerd/client.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_STATES 1024

static void sleep_us(uint64_t us) {
  struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
  nanosleep(&ts, NULL);
}

static int fail(const char *what, int code) {
  fprintf(stderr, "hello_steerd: %s: %s (%s)\n", what, steerdc_strerror(code), steerdc_error_name(code));
  return 1;
}

/* A spawn, waited for: the ACK carries the new agent's id. */
static int spawn_at(steerdc_client *c, float x, float y, uint32_t *agent) {
  steerdc_spawn_desc s;
  steerdc_spawn_init(&s, STEERDC_MODEL_DYNAMIC, x, y);
  s.present = STEERDC_SPAWN_LIMITS;
  s.limits.present = STEERDC_LIMIT_MAX_SPEED;
  s.limits.max_speed = 3.0f;
  uint32_t req;
  int r = steerdc_spawn(c, &s, &req);
  steerdc_reply reply;
  if (r == 0)
    r = steerdc_wait_reply(c, req, 3000, &reply);
  if (r == STEERDC_EREPLY)
    fprintf(stderr, "hello_steerd: SPAWN refused: %s: %s\n", steerdc_wire_error_name(reply.error_code),
            reply.message);
  if (r == 0)
    *agent = reply.agent;
  return r;
}

static const steerdc_agent_state *find(const steerdc_agent_state *s, int n, uint32_t id) {
  for (int i = 0; i < n; i++)
    if (s[i].id == id)
      return &s[i];
  return NULL;
}

/* An argument, else the environment variable the steerd programs share, else a default. */
static const char *arg_or_env(int argc, char **argv, int i, const char *env, const char *fallback) {
  if (argc > i)
    return argv[i];
  const char *v = getenv(env);
  return v != NULL && *v != '\0' ? v : fallback;
}

int main(int argc, char **argv) {
  if (argc > 4 || (argc > 1 && argv[1][0] == '-')) {
    fprintf(stderr, "usage: hello_steerd [HOST [PORT [TOKEN]]]\n"
                    "  defaults: STEERD_HOST or 127.0.0.1, STEERD_PORT or 7777, STEERD_TOKEN or none\n");
    return 2;
  }
  const char *host = arg_or_env(argc, argv, 1, "STEERD_HOST", "127.0.0.1");
  const char *port_text = arg_or_env(argc, argv, 2, "STEERD_PORT", "7777");
  const char *token = arg_or_env(argc, argv, 3, "STEERD_TOKEN", NULL);
  char *port_end;
  unsigned long port = strtoul(port_text, &port_end, 10);
  if (*port_text == '\0' || *port_end != '\0' || port == 0 || port > 65535) {
    fprintf(stderr, "hello_steerd: the port is '%s'; it needs one in 1..65535\n", port_text);
    return 2;
  }
  if (steerdc_version() >> 16 != STEERDC_VERSION_MAJOR) {
    fprintf(stderr, "hello_steerd: library version %u.%u, header %d.%d\n", steerdc_version() >> 16,
            (steerdc_version() >> 8) & 0xffu, STEERDC_VERSION_MAJOR, STEERDC_VERSION_MINOR);
    return 1;
  }
  steerdc_config cfg;
  steerdc_config_init(&cfg);
  cfg.max_agents = MAX_STATES;
  steerdc_client *c = steerdc_create(&cfg);
  if (c == NULL)
    return fail("create", STEERDC_ENOMEM);
  int r = steerdc_connect(c, host, (uint16_t)port, "hello_steerd", token);
  if (r < 0)
    return fail("connect", r);
  steerdc_welcome w;
  steerdc_get_welcome(c, &w);
  printf("connected: client %u, %u Hz ticks, %u Hz snapshots, world [%g, %g]-[%g, %g]\n", w.client_id,
         w.tick_rate, w.snapshot_rate, w.world_min_x, w.world_min_y, w.world_max_x, w.world_max_y);

  uint32_t seeker = 0, walker = 0;
  if ((r = spawn_at(c, 0.0f, 0.0f, &seeker)) < 0 || (r = spawn_at(c, 5.0f, 0.0f, &walker)) < 0)
    return fail("spawn", r);
  uint32_t req;
  if ((r = steerdc_set_target(c, seeker, STEERDC_BEHAVIOUR_SEEK, 20.0f, 0.0f, &req)) < 0)
    return fail("set_target", r);
  const float path[] = {5.0f, 6.0f, -5.0f, 6.0f};
  steerdc_path_options po = {1.0f, STEERDC_PATH_ONCE, STEERDC_CORNER_NONE, {0, {0}}};
  if ((r = steerdc_set_path(c, walker, path, 2, &po, &req)) < 0)
    return fail("set_path", r);

  static steerdc_agent_state states[MAX_STATES];
  steerdc_event events[64];
  steerdc_reply replies[16];
  int n = 0, replies_seen = 0, errors = 0, events_seen = 0;
  steerdc_render_info info = {0};
  uint64_t end = steerdc_now_us() + 3000000u;
  while (steerdc_now_us() < end) { /* the render loop */
    if ((r = steerdc_update(c, 0)) < 0)
      return fail("update", r);
    int k = steerdc_poll_states(c, 0, states, MAX_STATES, &info);
    if (k >= 0)
      n = k;
    int e = steerdc_poll_events(c, events, 64);
    for (int i = 0; i < e; i++)
      events_seen += events[i].agent == seeker || events[i].agent == walker;
    int q = steerdc_poll_replies(c, replies, 16);
    for (int i = 0; i < q; i++) {
      replies_seen++;
      errors += replies[i].status != 0;
    }
    sleep_us(16667);
  }
  const steerdc_agent_state *s = find(states, n, seeker), *p = find(states, n, walker);
  if (s == NULL || p == NULL) {
    fprintf(stderr, "hello_steerd: agents missing from the interpolated states (%d states)\n", n);
    return 1;
  }
  steerdc_stats st;
  steerdc_get_stats(c, &st);
  printf("render time %lld us, delay %.1f ms, %u agents\n", (long long)info.render_time_us, info.delay_ms,
         info.agent_count);
  printf("seeker %u at (%.2f, %.2f) heading %.2f rad, speed %.2f m/s\n", s->id, s->x, s->y, s->theta,
         hypot(s->vx, s->vy));
  printf("walker %u at (%.2f, %.2f)\n", p->id, p->x, p->y);
  printf("replies %d (errors %d), events %d, frames %llu, rtt %.1f ms\n", replies_seen, errors, events_seen,
         (unsigned long long)st.frames_complete, (double)st.rtt_min_us / 1000.0);
  steerdc_disconnect(c, 1000);
  steerdc_destroy(c);
  /* Seek +x from the origin for ~3 s at up to 3 m/s; the path leads up to y = 6. */
  int ok = s->x > 2.0f && fabsf(s->y) < 1.0f && p->y > 2.0f && replies_seen == 2 && errors == 0;
  printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
