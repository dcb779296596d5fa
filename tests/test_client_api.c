/* test_client_api.c: libsteerd-client's public API (client-sample/include/steerd/client.h)
 * against the real server on 127.0.0.1.
 *
 * Linked with the shared library (libsteerd-client.so) and nothing else of the
 * client: only steerdc_* is visible. The server is the real binary
 * (tests/support/steerd_proc.h); tokens for the HELLO are minted with the
 * server's own auth code.
 *
 *   errors      every error code has a name and a text; bad arguments and
 *               calls before a connection fail with their codes
 *   numbers     every public number the wire carries as a number (event codes,
 *               command types, error codes) is PROTOCOL.md's, read from its
 *               tables; the numbers of the enums sent as names are the ABI's
 *   token       HELLO with a valid token is welcomed; none or a forged one is
 *               refused with UNAUTHORIZED and the server's text
 *   commands    (full and delta snapshots) every command: SPAWN (with limits, with a
 *               path), SET_BEHAVIOUR (seek), SET_PATH, SET_PARAMS, STOP, QUERY,
 *               PING, VIEW, DESPAWN; the interpolated states show the agents going
 *               where they were sent; events; an ERROR reply; clock offset
 *   polling     non-blocking connect and replies collected by polling, in order */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <steerd/client.h>

#include "auth.h"
#include "check_run.h"
#include "steerd_proc.h"

#define SECRET     "a test secret for test_client_api, 32+ bytes long"
#define TIMEOUT_MS 5000
#define MAX_STATES 256

static steerd_proc start_server(const char *secret) {
  steerd_proc p;
  const char *extra[] = {"--no-demo", NULL};
  if (secret != NULL)
    setenv("STEERD_SECRET", secret, 1);
  int r = steerd_proc_start(&p, STEERD_BINARY, extra, 10000);
  unsetenv("STEERD_SECRET");
  ck_assert_int_eq(r, 0);
  return p;
}

static steerdc_client *make(uint32_t snapshots) {
  steerdc_config cfg;
  steerdc_config_init(&cfg);
  cfg.max_agents = MAX_STATES;
  cfg.snapshots = snapshots;
  cfg.connect_timeout_ms = 10000;
  steerdc_client *c = steerdc_create(&cfg);
  ck_assert_ptr_nonnull(c);
  return c;
}

static steerdc_client *connected(const steerd_proc *p, uint32_t snapshots) {
  steerdc_client *c = make(snapshots);
  int r = steerdc_connect(c, "127.0.0.1", p->port, "test_client_api", NULL);
  ck_assert_msg(r == 0, "connect: %s", steerdc_strerror(r));
  ck_assert_uint_eq(steerdc_get_state(c), STEERDC_STATE_CONNECTED);
  return c;
}

/* Waits for the reply to *idp; asserts an ACK unless want_error. */
static steerdc_reply reply_of(steerdc_client *c, int send_rc, const uint32_t *idp) {
  ck_assert_msg(send_rc == 0, "send: %s", steerdc_strerror(send_rc));
  uint32_t id = *idp; /* read after the send that set it */
  steerdc_reply r;
  int rc = steerdc_wait_reply(c, id, TIMEOUT_MS, &r);
  ck_assert_msg(rc == 0 || rc == STEERDC_EREPLY, "wait: %s", steerdc_strerror(rc));
  ck_assert_uint_eq(r.request_id, id);
  ck_assert_int_eq(r.status, rc);
  return r;
}

static steerdc_reply ack_of(steerdc_client *c, int send_rc, const uint32_t *idp) {
  steerdc_reply r = reply_of(c, send_rc, idp);
  ck_assert_msg(r.status == 0, "ERROR %s: %s (%s)", steerdc_wire_error_name(r.error_code), r.message,
                r.field);
  return r;
}

/* A render loop for ms milliseconds at ~60 Hz; the last poll's states in out. */
static int render_for(steerdc_client *c, uint32_t ms, steerdc_agent_state *out, steerdc_render_info *info) {
  uint64_t end = steerdc_now_us() + (uint64_t)ms * 1000u;
  int n = STEERDC_ENODATA;
  do {
    int r = steerdc_update(c, 16);
    ck_assert_msg(r >= 0, "update: %s", steerdc_strerror(r));
    n = steerdc_poll_states(c, 0, out, MAX_STATES, info);
  } while (steerdc_now_us() < end);
  return n;
}

static const steerdc_agent_state *find(const steerdc_agent_state *s, int n, uint32_t id) {
  for (int i = 0; i < n; i++)
    if (s[i].id == id)
      return &s[i];
  return NULL;
}

/* Events of agent with code, drained from the queue into a count. */
static int count_events(steerdc_client *c, uint32_t agent, uint32_t code, steerdc_event *last) {
  steerdc_event ev[256];
  int total = 0, n;
  while ((n = steerdc_poll_events(c, ev, 256)) > 0)
    for (int i = 0; i < n; i++)
      if (ev[i].agent == agent && ev[i].code == code) {
        total++;
        if (last != NULL)
          *last = ev[i];
      }
  return total;
}

START_TEST(test_errors) {
  ck_assert_uint_eq(steerdc_version() >> 16, STEERDC_VERSION_MAJOR);
  for (int code = 0; code > -STEERDC_ERROR_COUNT; code--) {
    ck_assert_str_ne(steerdc_error_name(code), "UNKNOWN");
    ck_assert_str_ne(steerdc_strerror(code), "unknown error");
    for (int other = 0; other > code; other--)
      ck_assert_str_ne(steerdc_error_name(code), steerdc_error_name(other));
  }
  ck_assert_str_eq(steerdc_error_name(STEERDC_ENODATA), "ENODATA");
  ck_assert_str_eq(steerdc_error_name(-STEERDC_ERROR_COUNT), "UNKNOWN");
  ck_assert_str_eq(steerdc_error_name(1), "UNKNOWN");
  ck_assert_str_eq(steerdc_wire_error_name(6), "NO_SUCH_AGENT");
  ck_assert_str_eq(steerdc_wire_error_name(15), "UNAUTHORIZED");
  ck_assert_str_eq(steerdc_wire_error_name(0), "UNKNOWN");
  ck_assert_str_eq(steerdc_wire_error_name(999), "UNKNOWN");
  ck_assert_str_ne(steerdc_wire_error_text(3), "unknown error code");
  ck_assert_str_eq(steerdc_disconnect_name(7), "authentication failed");

  steerdc_config cfg;
  steerdc_config_init(&cfg);
  ck_assert_uint_eq(cfg.max_agents, 10000);
  steerdc_config bad = cfg;
  bad.max_agents = 0;
  ck_assert_ptr_null(steerdc_create(&bad));
  bad = cfg;
  bad.snapshots = 2;
  ck_assert_ptr_null(steerdc_create(&bad));
  bad = cfg;
  bad.samples_per_agent = 1;
  ck_assert_ptr_null(steerdc_create(&bad));
  bad = cfg;
  bad.min_delay_us = bad.max_delay_us + 1;
  ck_assert_ptr_null(steerdc_create(&bad));
  steerdc_destroy(NULL);

  steerdc_client *c = steerdc_create(NULL);
  ck_assert_ptr_nonnull(c);
  uint32_t id = 0;
  steerdc_agent_state s[4];
  steerdc_reply rep;
  steerdc_welcome w;
  ck_assert_int_eq(steerdc_despawn(c, 1, &id), STEERDC_ENOTCONN);
  ck_assert_int_eq(steerdc_ping(c, &id), STEERDC_ENOTCONN);
  ck_assert_int_eq(steerdc_update(c, 0), STEERDC_ENOTCONN);
  ck_assert_int_eq(steerdc_wait_reply(c, 1, 10, &rep), STEERDC_ENOTCONN);
  ck_assert_int_eq(steerdc_poll_states(c, 0, s, 4, NULL), STEERDC_ENODATA);
  ck_assert_int_eq(steerdc_get_agent(c, 1, s), STEERDC_ENODATA);
  ck_assert_int_eq(steerdc_latest_frame(c, s, 4, NULL, NULL), STEERDC_ENODATA);
  ck_assert_int_eq(steerdc_get_welcome(c, &w), STEERDC_ENOTCONN);
  ck_assert_int_eq(steerdc_last_error(c, &rep), STEERDC_ENOENT);
  ck_assert_int_eq(steerdc_poll_states(c, 0, NULL, 4, NULL), STEERDC_EINVAL);
  ck_assert_int_eq(steerdc_poll_events(c, NULL, 1), STEERDC_EINVAL);
  ck_assert_int_eq(steerdc_connect(c, "127.0.0.1", 0, "x", NULL), STEERDC_EINVAL);
  ck_assert_int_eq(steerdc_connect(c, NULL, 7777, "x", NULL), STEERDC_EINVAL);
  ck_assert_uint_eq(steerdc_server_time_us(c), 0);
  ck_assert_uint_eq(steerdc_get_state(c), STEERDC_STATE_IDLE);
  steerdc_stats st;
  steerdc_get_stats(c, &st);
  ck_assert_uint_eq(st.packets_received, 0);
  /* A name longer than the protocol allows. */
  char name[100];
  memset(name, 'n', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  ck_assert_int_eq(steerdc_connect_start(c, "127.0.0.1", 7777, name, NULL), STEERDC_EINVAL);
  steerdc_destroy(c);
}
END_TEST

static char *read_spec(void) {
  FILE *f = fopen(PROTOCOL_MD, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", PROTOCOL_MD);
  ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  ck_assert_int_gt(n, 0);
  rewind(f);
  char *text = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(text);
  ck_assert_uint_eq(fread(text, 1, (size_t)n, f), (size_t)n);
  text[n] = '\0';
  fclose(f);
  return text;
}

/* Whether the spec has a table row beginning "| value | name |". */
static int spec_row(const char *spec, long value, const char *name) {
  char row[96];
  snprintf(row, sizeof row, "\n| %ld | %s |", value, name);
  return strstr(spec, row) != NULL;
}

/* Each value by itself, so that a reordering anywhere shows here: the C#
 * binding and compiled games hold these numbers. */
typedef struct named {
  long value, want;
  const char *name;
} named;
#define N(v, want)                                                                                           \
  { (long)(v), (want), #v }

START_TEST(test_numbers) {
  char *spec = read_spec();
  /* EVENT codes (PROTOCOL.md 7.4). */
  static const struct {
    long value;
    const char *wire;
  } events[] = {{STEERDC_EVENT_ARRIVED, "arrived"},
                {STEERDC_EVENT_WAYPOINT, "waypoint"},
                {STEERDC_EVENT_PATH_FINISHED, "path_finished"},
                {STEERDC_EVENT_REVERSED, "reversed"},
                {STEERDC_EVENT_SPAWNED, "spawned"},
                {STEERDC_EVENT_DESPAWNED, "despawned"},
                {STEERDC_EVENT_STUCK, "stuck"},
                {STEERDC_EVENT_PLANNED, "planned"},
                {STEERDC_EVENT_REPLANNED, "replanned"},
                {STEERDC_EVENT_UNREACHABLE, "unreachable"}};
  for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
    ck_assert_msg(spec_row(spec, events[i].value, events[i].wire), "event %s is not %ld in PROTOCOL.md",
                  events[i].wire, events[i].value);
  /* Command types: the headings "6.n NAME (type)" and "ADD_OBSTACLE (12)". */
  static const struct {
    long value;
    const char *wire;
  } cmds[] = {{STEERDC_CMD_SPAWN, "SPAWN"},
              {STEERDC_CMD_DESPAWN, "DESPAWN"},
              {STEERDC_CMD_SET_BEHAVIOUR, "SET_BEHAVIOUR"},
              {STEERDC_CMD_SET_PATH, "SET_PATH"},
              {STEERDC_CMD_SET_PARAMS, "SET_PARAMS"},
              {STEERDC_CMD_STOP, "STOP"},
              {STEERDC_CMD_QUERY, "QUERY"},
              {STEERDC_CMD_PING, "PING"},
              {STEERDC_CMD_VIEW, "VIEW"},
              {STEERDC_CMD_ADD_OBSTACLE, "ADD_OBSTACLE"},
              {STEERDC_CMD_REMOVE_OBSTACLE, "REMOVE_OBSTACLE"}};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    char heading[64];
    snprintf(heading, sizeof heading, " %s (%ld)", cmds[i].wire, cmds[i].value);
    ck_assert_msg(strstr(spec, heading) != NULL, "command %s is not type %ld in PROTOCOL.md", cmds[i].wire,
                  cmds[i].value);
  }
  /* ERROR codes (PROTOCOL.md 11): every row is the library's name, and the
   * code after the last has none. */
  long code = 1;
  while (spec_row(spec, code, steerdc_wire_error_name((uint32_t)code)))
    code++;
  ck_assert_msg(code > 21, "error %ld: the library says %s, PROTOCOL.md's table another", code,
                steerdc_wire_error_name((uint32_t)code));
  ck_assert_str_eq(steerdc_wire_error_name((uint32_t)code), "UNKNOWN");
  free(spec);
  /* Sent as names (the library converts): the numbers are the ABI's. */
  static const named abi[] = {N(STEERDC_MODEL_KINEMATIC, 0),
                              N(STEERDC_MODEL_DYNAMIC, 1),
                              N(STEERDC_MODEL_HEADING, 2),
                              N(STEERDC_BEHAVIOUR_NONE, 0),
                              N(STEERDC_BEHAVIOUR_SEEK, 1),
                              N(STEERDC_BEHAVIOUR_FLEE, 2),
                              N(STEERDC_BEHAVIOUR_ARRIVE, 3),
                              N(STEERDC_BEHAVIOUR_ALIGN, 4),
                              N(STEERDC_BEHAVIOUR_VELOCITY_MATCH, 5),
                              N(STEERDC_BEHAVIOUR_FACE, 6),
                              N(STEERDC_BEHAVIOUR_LOOK_WHERE_GOING, 7),
                              N(STEERDC_BEHAVIOUR_PURSUE, 8),
                              N(STEERDC_BEHAVIOUR_EVADE, 9),
                              N(STEERDC_BEHAVIOUR_INTERPOSE, 10),
                              N(STEERDC_BEHAVIOUR_WANDER, 11),
                              N(STEERDC_BEHAVIOUR_FOLLOW_PATH, 12),
                              N(STEERDC_FACING_LOOK_WHERE_GOING, 0),
                              N(STEERDC_FACING_NONE, 1),
                              N(STEERDC_FACING_TARGET, 2),
                              N(STEERDC_COMBINE_BLEND, 0),
                              N(STEERDC_COMBINE_PRIORITY, 1),
                              N(STEERDC_PATH_ONCE, 0),
                              N(STEERDC_PATH_LOOP, 1),
                              N(STEERDC_PATH_PINGPONG, 2),
                              N(STEERDC_CORNER_NONE, 0),
                              N(STEERDC_CORNER_ARC, 1),
                              N(STEERDC_CORNER_LAZY, 2),
                              N(STEERDC_OBSTACLE_CIRCLE, 0),
                              N(STEERDC_OBSTACLE_POLYGON, 1),
                              N(STEERDC_OBSTACLE_WALL, 2),
                              N(STEERDC_SNAPSHOTS_FULL, 0),
                              N(STEERDC_SNAPSHOTS_DELTA, 1),
                              N(STEERDC_VIEW_ALL, 0),
                              N(STEERDC_VIEW_CENTRE, 1),
                              N(STEERDC_VIEW_FOLLOW, 2),
                              N(STEERDC_PARAM_TIME_TO_TARGET, 0),
                              N(STEERDC_PARAM_TARGET_RADIUS, 1),
                              N(STEERDC_PARAM_SLOW_RADIUS, 2),
                              N(STEERDC_PARAM_KINEMATIC_TIME_TO_TARGET, 3),
                              N(STEERDC_PARAM_ALIGN_TARGET_RADIUS, 4),
                              N(STEERDC_PARAM_ALIGN_SLOW_RADIUS, 5),
                              N(STEERDC_PARAM_ALIGN_TIME_TO_TARGET, 6),
                              N(STEERDC_PARAM_MAX_PREDICTION, 7),
                              N(STEERDC_PARAM_PANIC_RADIUS, 8),
                              N(STEERDC_PARAM_WANDER_OFFSET, 9),
                              N(STEERDC_PARAM_WANDER_RADIUS, 10),
                              N(STEERDC_PARAM_WANDER_RATE, 11),
                              N(STEERDC_PARAM_SEPARATION_RADIUS, 12),
                              N(STEERDC_PARAM_TURN_TRIGGER_DISTANCE, 13),
                              N(STEERDC_PARAM_PATH_RECOVER_STRENGTH, 14),
                              N(STEERDC_PARAM_COUNT, 15)};
  for (size_t i = 0; i < sizeof abi / sizeof abi[0]; i++)
    ck_assert_msg(abi[i].value == abi[i].want, "%s is %ld, the ABI says %ld", abi[i].name, abi[i].value,
                  abi[i].want);
}
END_TEST

/* The layout of every public struct is part of the ABI, and the C# binding
 * (tests/csharp/SteerdClientTest.cs checks the same numbers with Marshal.SizeOf)
 * mirrors it field by field: a change here is a change there, and a new
 * STEERDC_VERSION_MAJOR. */
START_TEST(test_abi_layout) {
  ck_assert_uint_eq(sizeof(steerdc_config), 40);
  ck_assert_uint_eq(sizeof(steerdc_agent_state), 32);
  ck_assert_uint_eq(sizeof(steerdc_render_info), 32);
  ck_assert_uint_eq(sizeof(steerdc_event), 24);
  ck_assert_uint_eq(sizeof(steerdc_reply), 432);
  ck_assert_uint_eq(offsetof(steerdc_reply, x), 64);
  ck_assert_uint_eq(offsetof(steerdc_reply, message), 112);
  ck_assert_uint_eq(offsetof(steerdc_reply, field), 368);
  ck_assert_uint_eq(sizeof(steerdc_limits), 24);
  ck_assert_uint_eq(sizeof(steerdc_params), 64);
  ck_assert_uint_eq(sizeof(steerdc_behaviour), 108);
  ck_assert_uint_eq(offsetof(steerdc_behaviour, params), 44);
  ck_assert_uint_eq(sizeof(steerdc_path_options), 76);
  ck_assert_uint_eq(sizeof(steerdc_spawn_desc), 160);
  ck_assert_uint_eq(offsetof(steerdc_spawn_desc, behaviour), 52);
  ck_assert_uint_eq(sizeof(steerdc_view), 20);
  ck_assert_uint_eq(sizeof(steerdc_welcome), 48);
  ck_assert_uint_eq(sizeof(steerdc_stats), 192);
  ck_assert_uint_eq(offsetof(steerdc_stats, delay_ms), 184);
  ck_assert_uint_eq(offsetof(steerdc_reply, moved), 108); /* was `reserved`: the layout is the same */
  ck_assert_uint_eq(sizeof(steerdc_obstacle), 24);
}
END_TEST

/* The map (PROTOCOL.md 17) through the public API: the copy follows an admin's
 * changes, the ACK carries id, version and agents moved; a controller is refused. */
START_TEST(test_map) {
  steerd_proc p;
  const char *extra[] = {"--no-demo", "--anonymous-role", "admin", NULL};
  ck_assert_int_eq(steerd_proc_start(&p, STEERD_BINARY, extra, 10000), 0);
  steerdc_client *c = connected(&p, STEERDC_SNAPSHOTS_FULL);
  int current = 0;
  for (int i = 0; i < 200 && !current; i++) {
    steerdc_update(c, 10);
    steerdc_map_version(c, &current);
  }
  ck_assert_int_eq(current, 1);
  ck_assert_uint_eq(steerdc_map_count(c), 0);
  uint32_t id;
  const float door[] = {10.0f, 6.0f, 10.0f, 8.5f};
  steerdc_reply r = ack_of(c, steerdc_add_obstacle(c, 12, STEERDC_OBSTACLE_WALL, door, 2, 0.0f, &id), &id);
  ck_assert_uint_eq(r.command, STEERDC_CMD_ADD_OBSTACLE);
  ck_assert_uint_eq(r.agent, 12);
  ck_assert_uint_eq(r.tick, 1);
  ck_assert_uint_eq(r.moved, 0);
  const float barrel[] = {-3.5f, 4.0f};
  ack_of(c, steerdc_add_obstacle(c, 20, STEERDC_OBSTACLE_CIRCLE, barrel, 1, 0.75f, &id), &id);
  for (int i = 0; i < 200 && steerdc_map_version(c, NULL) != 2; i++)
    steerdc_update(c, 10);
  ck_assert_uint_eq(steerdc_map_version(c, &current), 2);
  ck_assert_int_eq(current, 1);
  ck_assert_uint_eq(steerdc_map_count(c), 2);
  steerdc_obstacle o;
  ck_assert_int_eq(steerdc_map_get(c, 0, &o), 0);
  ck_assert_uint_eq(o.id, 12);
  ck_assert_uint_eq(o.kind, STEERDC_OBSTACLE_WALL);
  ck_assert_uint_eq(o.count, 2);
  ck_assert_float_eq(o.points_xy[3], 8.5f);
  ck_assert_int_eq(steerdc_map_get(c, 1, &o), 0);
  ck_assert_uint_eq(o.kind, STEERDC_OBSTACLE_CIRCLE);
  ck_assert_float_eq(o.radius, 0.75f);
  ck_assert_float_eq(o.points_xy[0], -3.5f);
  ck_assert_int_eq(steerdc_map_get(c, 2, &o), STEERDC_EINVAL);
  r = ack_of(c, steerdc_remove_obstacle(c, 12, &id), &id);
  ck_assert_uint_eq(r.command, STEERDC_CMD_REMOVE_OBSTACLE);
  ck_assert_uint_eq(r.tick, 3);
  r = reply_of(c, steerdc_remove_obstacle(c, 12, &id), &id);
  ck_assert_uint_eq(r.error_code, 18); /* NO_SUCH_OBSTACLE */
  ck_assert_str_eq(r.field, "id");
  for (int i = 0; i < 200 && steerdc_map_version(c, NULL) != 3; i++)
    steerdc_update(c, 10);
  ck_assert_uint_eq(steerdc_map_count(c), 1);
  ck_assert_int_eq(steerdc_add_obstacle(c, 1, 7, barrel, 1, 1.0f, &id), STEERDC_EINVAL); /* no such kind */
  steerdc_destroy(c);
  ck_assert_int_ne(steerd_proc_stop(&p, 3000), -1);
}
END_TEST

static void mint(const char *secret, char *out, size_t cap) {
  steerd_auth a;
  ck_assert_int_eq(steerd_auth_init(&a, secret, strlen(secret)), STEERD_AUTH_OK);
  steerd_token t;
  memset(&t, 0, sizeof t);
  strcpy(t.name, "api-test");
  t.role = STEERD_ROLE_CONTROLLER;
  t.issued_at = (uint64_t)time(NULL);
  t.expires_at = t.issued_at + 3600;
  ck_assert_int_gt(steerd_auth_issue(&a, &t, out, cap), 0);
}

START_TEST(test_token) {
  steerd_proc p = start_server(SECRET);
  char token[STEERD_AUTH_MAX_TOKEN_BYTES + 1], forged[STEERD_AUTH_MAX_TOKEN_BYTES + 1];
  mint(SECRET, token, sizeof token);
  mint("another secret of at least sixteen bytes", forged, sizeof forged);

  steerdc_client *c = make(STEERDC_SNAPSHOTS_FULL);
  ck_assert_int_eq(steerdc_connect(c, "127.0.0.1", p.port, "with-token", token), 0);
  steerdc_welcome w;
  ck_assert_int_eq(steerdc_get_welcome(c, &w), 0);
  ck_assert_uint_gt(w.client_id, 0);
  ck_assert_uint_eq(w.protocol, 1);
  ck_assert_uint_gt(w.snapshot_rate, 0);
  ck_assert(w.world_max_x > w.world_min_x);
  /* A controller may spawn. */
  steerdc_spawn_desc s;
  steerdc_spawn_init(&s, STEERDC_MODEL_DYNAMIC, 0, 0);
  uint32_t id;
  ck_assert_uint_gt(ack_of(c, steerdc_spawn(c, &s, &id), &id).agent, 0);
  steerdc_destroy(c);

  const char *bad[] = {NULL, forged};
  for (int i = 0; i < 2; i++) {
    c = make(STEERDC_SNAPSHOTS_FULL);
    int r = steerdc_connect(c, "127.0.0.1", p.port, "no-good-token", bad[i]);
    ck_assert_int_eq(r, STEERDC_EREPLY);
    steerdc_reply e;
    ck_assert_int_eq(steerdc_last_error(c, &e), 0);
    ck_assert_str_eq(steerdc_wire_error_name(e.error_code), "UNAUTHORIZED");
    ck_assert_int_eq(e.status, STEERDC_EREPLY);
    ck_assert_uint_gt(strlen(e.message), 0);
    ck_assert_uint_eq(steerdc_get_state(c), STEERDC_STATE_DISCONNECTED);
    ck_assert_int_lt(steerdc_update(c, 0), 0);
    steerdc_destroy(c);
  }
  steerd_proc_stop(&p, 5000);
}
END_TEST

/* Every command, in the mode of the loop index (0 full, 1 delta). */
START_TEST(test_commands) {
  uint32_t mode = (uint32_t)_i;
  steerd_proc p = start_server(NULL);
  steerdc_client *c = connected(&p, mode);
  static steerdc_agent_state st[MAX_STATES];
  steerdc_render_info info;
  uint32_t id;

  /* SPAWN with limits: a dynamic seeker at the origin, max 3 m/s. */
  steerdc_spawn_desc sd;
  steerdc_spawn_init(&sd, STEERDC_MODEL_DYNAMIC, 0.0f, 0.0f);
  sd.present = STEERDC_SPAWN_LIMITS | STEERDC_SPAWN_ORIENTATION;
  sd.orientation = 0.5f;
  sd.limits.present = STEERDC_LIMIT_MAX_SPEED;
  sd.limits.max_speed = 3.0f;
  steerdc_reply r = ack_of(c, steerdc_spawn(c, &sd, &id), &id);
  ck_assert_uint_eq(r.command, STEERDC_CMD_SPAWN);
  uint32_t seeker = r.agent;
  ck_assert_uint_ne(seeker, 0);

  /* SPAWN with a path: a walker along a pingpong line at y = -10. */
  steerdc_spawn_init(&sd, STEERDC_MODEL_DYNAMIC, -10.0f, -10.0f);
  const float line[] = {-10.0f, -10.0f, 10.0f, -10.0f};
  steerdc_path_options po = {1.0f, STEERDC_PATH_PINGPONG, STEERDC_CORNER_NONE, {0, {0}}};
  uint32_t walker = ack_of(c, steerdc_spawn_with_path(c, &sd, line, 2, &po, &id), &id).agent;
  ck_assert_uint_ne(walker, 0);

  /* SET_BEHAVIOUR: seek (20, 0). */
  r = ack_of(c, steerdc_set_target(c, seeker, STEERDC_BEHAVIOUR_SEEK, 20.0f, 0.0f, &id), &id);
  ck_assert_uint_eq(r.command, STEERDC_CMD_SET_BEHAVIOUR);
  ck_assert_uint_eq(r.agent, seeker);

  int n = render_for(c, 2500, st, &info);
  ck_assert_int_ge(n, 2);
  ck_assert_uint_ge(info.agent_count, 2);
  ck_assert(info.delay_ms >= 50.0f && info.delay_ms <= 1000.0f);
  const steerdc_agent_state *a = find(st, n, seeker);
  ck_assert_ptr_nonnull(a);
  /* Seek along +x from rest: moving right, barely off the axis, heading ~0. */
  ck_assert_msg(a->x > 1.5f && a->x < 20.0f && fabsf(a->y) < 0.5f, "seeker at (%f, %f)", a->x, a->y);
  ck_assert_msg(a->vx > 0.5f && fabsf(a->theta) < 0.3f, "seeker v (%f, %f) theta %f", a->vx, a->vy, a->theta);
  /* Smooth by default: nearly every state was interpolated between snapshots (a
   * late snapshot on a busy machine may make a few extrapolated). */
  steerdc_stats early;
  steerdc_get_stats(c, &early);
  ck_assert_uint_gt(early.samples_total, 100);
  ck_assert_msg(early.samples_extrapolated * 5 < early.samples_total, "%llu of %llu states extrapolated",
                (unsigned long long)early.samples_extrapolated, (unsigned long long)early.samples_total);
  ck_assert(a->mode == STEERDC_MODE_INTERPOLATE || a->mode == STEERDC_MODE_EXTRAPOLATE);
  const steerdc_agent_state *w = find(st, n, walker);
  ck_assert_ptr_nonnull(w);
  ck_assert_msg(w->x > -9.0f && fabsf(w->y + 10.0f) < 1.0f, "walker at (%f, %f)", w->x, w->y);
  steerdc_agent_state one;
  ck_assert_int_eq(steerdc_get_agent(c, seeker, &one), 0);
  ck_assert_float_eq(one.x, a->x);
  ck_assert_int_eq(steerdc_get_agent(c, 12345, &one), STEERDC_ENOENT);
  uint64_t tick = 0, t_us = 0;
  int m = steerdc_latest_frame(c, st, MAX_STATES, &tick, &t_us);
  ck_assert_int_ge(m, 2);
  ck_assert_uint_gt(tick, 0);
  ck_assert_uint_gt(t_us, 0);
  ck_assert_int_ge(count_events(c, seeker, STEERDC_EVENT_SPAWNED, NULL), 1);
  ck_assert_int_ge(count_events(c, walker, STEERDC_EVENT_WAYPOINT, NULL), 0);

  /* QUERY: the server's view agrees. */
  r = ack_of(c, steerdc_query(c, seeker, &id), &id);
  ck_assert_uint_eq(r.command, STEERDC_CMD_QUERY);
  ck_assert_uint_eq(r.model, STEERDC_MODEL_DYNAMIC);
  ck_assert_uint_eq(r.behaviour, STEERDC_BEHAVIOUR_SEEK);
  ck_assert_float_eq_tol(r.max_speed, 3.0f, 1e-6f);
  ck_assert(r.x > a->x - 0.01f); /* the query is newer than the render time */
  ck_assert_int_eq(r.path_node, -1);
  ck_assert_uint_gt(r.tick, 0);
  r = ack_of(c, steerdc_query(c, walker, &id), &id);
  ck_assert_uint_eq(r.behaviour, STEERDC_BEHAVIOUR_FOLLOW_PATH);
  ck_assert_int_ge(r.path_node, 0);

  /* SET_PARAMS: a lower top speed and an arrive radius. */
  steerdc_limits lim = {STEERDC_LIMIT_MAX_SPEED, 1.25f, 0, 0, 0, 0};
  steerdc_params par;
  memset(&par, 0, sizeof par);
  par.present = 1u << STEERDC_PARAM_TARGET_RADIUS;
  par.value[STEERDC_PARAM_TARGET_RADIUS] = 0.75f;
  ack_of(c, steerdc_set_params(c, seeker, &lim, &par, &id), &id);
  r = ack_of(c, steerdc_query(c, seeker, &id), &id);
  ck_assert_float_eq_tol(r.max_speed, 1.25f, 1e-6f);

  /* SET_PATH: the seeker turns back along a path up to y = 5. */
  const float up[] = {0.0f, 5.0f};
  ack_of(c, steerdc_set_path(c, seeker, up, 1, NULL, &id), &id);
  n = render_for(c, 3000, st, &info);
  a = find(st, n, seeker);
  ck_assert_ptr_nonnull(a);
  ck_assert_msg(a->y > 1.0f, "seeker after SET_PATH at (%f, %f)", a->x, a->y);

  /* STOP: behaviour none. */
  r = ack_of(c, steerdc_stop(c, seeker, &id), &id);
  ck_assert_uint_eq(r.command, STEERDC_CMD_STOP);
  r = ack_of(c, steerdc_query(c, seeker, &id), &id);
  ck_assert_uint_eq(r.behaviour, STEERDC_BEHAVIOUR_NONE);

  /* PING: a round trip and the clock offset. */
  r = ack_of(c, steerdc_ping(c, &id), &id);
  ck_assert_uint_eq(r.command, STEERDC_CMD_PING);
  ck_assert_uint_gt(r.server_time_us, 0);
  ck_assert_uint_lt(r.rtt_us, 1000000);
  steerdc_stats stats;
  steerdc_get_stats(c, &stats);
  ck_assert_uint_ge(stats.pings, 2); /* the automatic ones and this */
  uint64_t est = steerdc_server_time_us(c);
  ck_assert_msg(llabs((long long)est - (long long)r.server_time_us) < 1000000,
                "estimated server time %llu vs %llu", (unsigned long long)est,
                (unsigned long long)r.server_time_us);
  /* A sanitizer build on a loaded machine delivers fewer than half the 20 Hz. */
  ck_assert_uint_gt(stats.frames_complete, 20);
  ck_assert_uint_gt(stats.samples_total, 100);
  if (mode == STEERDC_SNAPSHOTS_DELTA) /* one SNAPSHOT_ACK per rebuilt frame */
    ck_assert_uint_eq(stats.delta_acks_sent, stats.frames_complete);

  /* VIEW: a circle far away empties a delta client's buffer; the whole world
   * brings the agents back. A full client is ACKed and sees no change. */
  steerdc_view v = {STEERDC_VIEW_CENTRE, 0, 400.0f, 400.0f, 5.0f};
  r = ack_of(c, steerdc_set_view(c, &v, &id), &id);
  ck_assert_uint_eq(r.command, STEERDC_CMD_VIEW);
  n = render_for(c, 1500, st, &info);
  ck_assert_int_eq(find(st, n, seeker) != NULL, mode == STEERDC_SNAPSHOTS_FULL);
  v.kind = STEERDC_VIEW_ALL;
  ack_of(c, steerdc_set_view(c, &v, &id), &id);
  n = render_for(c, 1500, st, &info);
  ck_assert_ptr_nonnull(find(st, n, seeker));
  v.kind = STEERDC_VIEW_FOLLOW;
  v.follow = walker;
  v.radius = 3.0f;
  ack_of(c, steerdc_set_view(c, &v, &id), &id);
  v.kind = STEERDC_VIEW_ALL;
  ack_of(c, steerdc_set_view(c, &v, &id), &id);

  /* DESPAWN: the event comes, the agent leaves the buffer. */
  count_events(c, seeker, STEERDC_EVENT_DESPAWNED, NULL);
  r = ack_of(c, steerdc_despawn(c, seeker, &id), &id);
  ck_assert_uint_eq(r.command, STEERDC_CMD_DESPAWN);
  n = render_for(c, 1000, st, &info);
  ck_assert_ptr_null(find(st, n, seeker));
  ck_assert_ptr_nonnull(find(st, n, walker));
  steerdc_event ev;
  ck_assert_int_eq(count_events(c, seeker, STEERDC_EVENT_DESPAWNED, &ev), 1);
  ck_assert_uint_gt(ev.tick, 0);

  /* An ERROR reply: the despawned agent is gone. */
  r = reply_of(c, steerdc_set_target(c, seeker, STEERDC_BEHAVIOUR_SEEK, 1.0f, 1.0f, &id), &id);
  ck_assert_int_eq(r.status, STEERDC_EREPLY);
  ck_assert_str_eq(steerdc_wire_error_name(r.error_code), "NO_SUCH_AGENT");
  ck_assert_uint_gt(strlen(r.message), 0);
  /* A value the server refuses, with the field named. */
  steerdc_spawn_init(&sd, STEERDC_MODEL_DYNAMIC, 1e5f, 0.0f);
  r = reply_of(c, steerdc_spawn(c, &sd, &id), &id);
  ck_assert_str_eq(steerdc_wire_error_name(r.error_code), "BAD_FIELD");
  ck_assert_str_eq(r.field, "x");
  /* Arguments refused before sending. */
  ck_assert_int_eq(steerdc_set_path(c, walker, line, 0, NULL, &id), STEERDC_EINVAL);
  ck_assert_int_eq(steerdc_set_path(c, walker, NULL, 2, NULL, &id), STEERDC_EINVAL);
  steerdc_behaviour b;
  steerdc_behaviour_init(&b, 999);
  ck_assert_int_eq(steerdc_set_behaviour(c, walker, &b, &id), STEERDC_EINVAL);
  steerdc_behaviour_init(&b, 99);
  ck_assert_int_eq(steerdc_set_behaviour(c, walker, &b, &id), STEERDC_EENCODE);

  /* The walker's path gives events on the way. */
  render_for(c, 500, st, &info);
  steerdc_get_stats(c, &stats);
  ck_assert_uint_gt(stats.events, 3);
  ck_assert_uint_eq(stats.events_dropped, 0);
  ck_assert_int_eq(steerdc_disconnect(c, 2000), 0);
  ck_assert_uint_eq(steerdc_get_state(c), STEERDC_STATE_DISCONNECTED);
  steerdc_destroy(c);
  steerd_proc_stop(&p, 5000);
}
END_TEST

START_TEST(test_polling) {
  steerd_proc p = start_server(NULL);
  steerdc_client *c = make(STEERDC_SNAPSHOTS_DELTA);
  ck_assert_int_eq(steerdc_connect_start(c, "127.0.0.1", p.port, "poller", ""), 0);
  ck_assert_uint_eq(steerdc_get_state(c), STEERDC_STATE_CONNECTING);
  ck_assert_int_eq(steerdc_connect_start(c, "127.0.0.1", p.port, "poller", ""), STEERDC_EBUSY);
  uint64_t end = steerdc_now_us() + 10000000u;
  while (steerdc_get_state(c) == STEERDC_STATE_CONNECTING && steerdc_now_us() < end)
    ck_assert_int_ge(steerdc_update(c, 10), 0);
  ck_assert_uint_eq(steerdc_get_state(c), STEERDC_STATE_CONNECTED);

  /* Ten spawns without waiting; the replies come back in order through the poll. */
  uint32_t ids[10];
  for (int i = 0; i < 10; i++) {
    steerdc_spawn_desc s;
    steerdc_spawn_init(&s, STEERDC_MODEL_KINEMATIC, (float)i, 0.0f);
    s.present = STEERDC_SPAWN_BEHAVIOUR;
    steerdc_behaviour_init(&s.behaviour, STEERDC_BEHAVIOUR_SEEK);
    s.behaviour.present = STEERDC_BHV_TARGET;
    s.behaviour.target_x = (float)i;
    s.behaviour.target_y = 30.0f;
    ck_assert_int_eq(steerdc_spawn(c, &s, &ids[i]), 0);
  }
  steerdc_reply rep[16];
  int got = 0;
  uint32_t agents[10];
  end = steerdc_now_us() + 10000000u;
  while (got < 10 && steerdc_now_us() < end) {
    ck_assert_int_ge(steerdc_update(c, 10), 0);
    int n = steerdc_poll_replies(c, rep, 16);
    for (int i = 0; i < n; i++, got++) {
      ck_assert_uint_eq(rep[i].request_id, ids[got]);
      ck_assert_int_eq(rep[i].status, 0);
      agents[got] = rep[i].agent;
    }
  }
  ck_assert_int_eq(got, 10);
  ck_assert_int_eq(steerdc_wait_reply(c, ids[0], 50, NULL), STEERDC_ETIMEDOUT); /* taken already */
  steerdc_agent_state st[MAX_STATES];
  steerdc_render_info info;
  int n = render_for(c, 2000, st, &info);
  ck_assert_int_eq(n, 10);
  ck_assert_uint_eq(info.agent_count, 10);
  /* cap below the count: only cap written, the count still says all. */
  ck_assert_int_eq(steerdc_poll_states(c, 0, st, 3, &info), 3);
  ck_assert_uint_eq(info.agent_count, 10);
  for (int i = 0; i < 10; i++) {
    steerdc_agent_state a;
    ck_assert_int_eq(steerdc_get_agent(c, agents[i], &a), 0);
    ck_assert_msg(a.y > 1.0f && fabsf(a.x - (float)i) < 0.2f, "agent %d at (%f, %f)", i, a.x, a.y);
  }
  steerdc_destroy(c);
  steerd_proc_stop(&p, 5000);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("client_api");
  TCase *tc = check_tcase(s, "api", 120);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_abi_layout);
  tcase_add_test(tc, test_numbers);
  tcase_add_test(tc, test_token);
  tcase_add_loop_test(tc, test_commands, STEERDC_SNAPSHOTS_FULL, STEERDC_SNAPSHOTS_DELTA + 1);
  tcase_add_test(tc, test_polling);
  tcase_add_test(tc, test_map);
  return s;
}

int main(void) { return check_run(suite()); }
