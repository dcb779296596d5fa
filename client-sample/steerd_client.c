/* steerd_client.c: steerd-client, a command-line client on the steerd_client
 * library: watch the world, send single commands, ping, and run load-test bots.
 * See usage() (cli_args.c) for every subcommand with an example. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

volatile sig_atomic_t g_stop;

static void on_sigint(int sig) {
  (void)sig;
  g_stop = 1;
}

/* ---- Output --------------------------------------------------------------- */

void print_num(FILE *f, const char *fmt, double v) {
  if (isfinite(v))
    fprintf(f, fmt, v);
  else
    fputs("null", f);
}

void print_server_error(const proto_error_msg *e) {
  fprintf(stderr, "steerd-client: %s: %s", proto_error_name((int)e->code), e->message);
  if (e->has_field)
    fprintf(stderr, " (field %s)", e->field);
  fputc('\n', stderr);
}

/* Prints why a library call failed; returns the exit code for it. */
int report(steerd_client *c, const char *what, int r, const proto_server_msg *reply) {
  if (r == STEERD_CLIENT_EREPLY) {
    if (reply != NULL && reply->type == PROTO_MSG_ERROR)
      print_server_error(&reply->error);
    else if (steerd_client_last_error(c) != NULL)
      print_server_error(steerd_client_last_error(c));
    return EXIT_REPLY_ERROR;
  }
  fprintf(stderr, "steerd-client: %s: %s: %s", what, steerd_client_error_name(r), steerd_client_strerror(r));
  if (r == STEERD_CLIENT_EDISCONNECTED)
    fprintf(stderr, " (reason %s)", proto_disconnect_name(steerd_client_disconnect_reason(c)));
  fputc('\n', stderr);
  return r == STEERD_CLIENT_EINVAL || r == STEERD_CLIENT_EENCODE ? EXIT_USAGE : EXIT_CONNECTION;
}

void print_frame(void *user, const steerd_client_frame *f) {
  (void)user;
  printf("{\"type\":\"snapshot\",\"tick\":%llu,\"time_us\":%llu,\"agents\":[", (unsigned long long)f->tick,
         (unsigned long long)f->server_time_us);
  for (uint32_t i = 0; i < f->count; i++) {
    const proto_pose *p = &f->poses[i];
    printf("%s{\"id\":%lu,\"x\":", i ? "," : "", (unsigned long)p->id);
    print_num(stdout, "%.2f", p->x);
    fputs(",\"y\":", stdout);
    print_num(stdout, "%.2f", p->y);
    fputs(",\"theta\":", stdout);
    print_num(stdout, "%.4f", p->theta);
    fputs(",\"vx\":", stdout);
    print_num(stdout, "%.2f", p->vx);
    fputs(",\"vy\":", stdout);
    print_num(stdout, "%.2f", p->vy);
    fputc('}', stdout);
  }
  fputs("]}\n", stdout);
  fflush(stdout); /* one line per frame for whoever reads the pipe */
}

void print_event(void *user, const proto_event *e) {
  (void)user;
  const char *name = proto_event_name(e->code);
  printf("{\"type\":\"event\",\"tick\":%llu,\"event\":", (unsigned long long)e->tick);
  if (name != NULL)
    printf("\"%s\"", name);
  else
    printf("%u", (unsigned)e->code);
  printf(",\"agent\":%lu,\"data\":%lu}\n", (unsigned long)e->agent, (unsigned long)e->data);
  fflush(stdout);
}

static void print_agent(const proto_agent_report *q) {
  const char *model = proto_model_name(q->model);
  const char *bhv = proto_behaviour_name(q->behaviour);
  printf("{\"type\":\"agent\",\"id\":%lu,\"tick\":%llu,\"model\":\"%s\",\"behaviour\":\"%s\",\"arrived\":%s,"
         "\"path_node\":",
         (unsigned long)q->agent, (unsigned long long)q->tick, model ? model : "?", bhv ? bhv : "?",
         q->arrived ? "true" : "false");
  if (q->path_node < 0)
    fputs("null", stdout);
  else
    printf("%ld", (long)q->path_node);
  const proto_state *s = &q->state;
  const double v[] = {s->position.x, s->position.y, s->orientation,
                      s->velocity.x, s->velocity.y, s->rotation};
  const char *const k[] = {"x", "y", "theta", "vx", "vy", "omega"};
  for (int i = 0; i < 6; i++) {
    printf(",\"%s\":", k[i]);
    print_num(stdout, "%.4f", v[i]);
  }
  const proto_limit_values *l = &q->limits;
  const double lv[PROTO_LIMIT_COUNT] = {l->max_speed, l->max_acceleration, l->max_rotation,
                                        l->max_angular_acceleration, l->radius};
  fputs(",\"limits\":{", stdout);
  for (uint32_t i = 0; i < PROTO_LIMIT_COUNT; i++) {
    const char *n = proto_limit_name(i);
    printf("%s\"%s\":", i ? "," : "", n ? n : "?");
    print_num(stdout, "%.4g", lv[i]);
  }
  printf("},\"owner\":%lu", (unsigned long)q->owner);
  if (q->has_tuning) {
    const proto_tuning *t = &q->tuning;
    const char *react = proto_stuck_reaction_name(t->stuck_reaction),
               *arrival = proto_arrival_name(t->arrival);
    fputs(",\"tuning\":{\"avoid_weight\":", stdout);
    print_num(stdout, "%.4g", t->avoid_weight);
    fputs(",\"avoid_horizon\":", stdout);
    print_num(stdout, "%.4g", t->avoid_horizon);
    printf(",\"avoid_priority\":%u,\"wall_lookahead\":", (unsigned)t->avoid_priority);
    print_num(stdout, "%.4g", t->wall_lookahead);
    fputs(",\"wall_margin\":", stdout);
    print_num(stdout, "%.4g", t->wall_margin);
    fputs(",\"stuck_time\":", stdout);
    print_num(stdout, "%.4g", t->stuck_time);
    printf(",\"stuck_reaction\":\"%s\",\"arrival\":\"%s\"}", react ? react : "?", arrival ? arrival : "?");
  }
  if (q->has_goto) {
    const proto_goto_report *g = &q->go;
    const char *st = proto_goto_status_name(g->status), *why = proto_goto_reason_name(g->reason);
    printf(",\"goto\":{\"status\":\"%s\",\"reason\":\"%s\",", st ? st : "?", why ? why : "?");
    if (g->target_kind == PROTO_TARGET_AGENT)
      printf("\"target_agent\":%lu", (unsigned long)g->target_agent);
    else
      printf("\"target\":[%.4f,%.4f]", (double)g->target.x, (double)g->target.y);
    if (g->queued)
      printf(",\"queue_position\":%lu", (unsigned long)g->queue_position);
    if (g->status == PROTO_GOTO_FOLLOWING) {
      printf(",\"goal\":[%.4f,%.4f],\"partial\":%s,\"route\":[", (double)g->goal.x, (double)g->goal.y,
             g->partial ? "true" : "false");
      for (uint32_t i = 0; i < g->route_count; i++)
        printf("%s[%.4f,%.4f]", i ? "," : "", (double)g->route[i].x, (double)g->route[i].y);
      fputs("]", stdout);
    }
    fputs("}", stdout);
  }
  fputs("}\n", stdout);
}

/* ---- GOTO's answer (goto --wait) ------------------------------------------------ */

/* The agent whose PLANNED or UNREACHABLE event `goto --wait` waits for. */
static struct {
  proto_id agent;
  int seen;
  proto_event ev;
} g_goto;

static void goto_on_event(void *user, const proto_event *e) {
  (void)user;
  if (g_goto.agent != 0 && !g_goto.seen && e->agent == g_goto.agent &&
      (e->code == PROTO_EVENT_PLANNED || e->code == PROTO_EVENT_UNREACHABLE)) {
    g_goto.ev = *e;
    g_goto.seen = 1;
  }
}

/* ---- Single-connection commands -------------------------------------------- */

/* The connection of a shell session: single commands reuse it, so agents spawned
 * earlier in the session stay theirs to command (only the owner may). */
static steerd_client *g_session;

steerd_client *open_client(const args *a, const steerd_client_callbacks *cb, int *exit_code) {
  if (g_session != NULL)
    return g_session;
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = a->name;
  cfg.token = a->token;
  cfg.connect_timeout_ms = a->timeout_ms;
  cfg.snapshots = a->delta ? PROTO_SNAPSHOTS_DELTA : PROTO_SNAPSHOTS_FULL;
  cfg.max_agents = 0; /* sized by WELCOME's max_agents: watch holds any world the server can */
  /* map prints any map the server can hold: every point is a segment's, or
   * one more per obstacle (a wall's last, a circle's centre). */
  cfg.map_obstacles = PROTO_MAP_MAX_OBSTACLES;
  cfg.map_points = PROTO_MAP_MAX_SEGMENTS + PROTO_MAP_MAX_OBSTACLES;
  if (cb != NULL)
    cfg.callbacks = *cb;
  steerd_client *c = steerd_client_create(&cfg);
  if (c == NULL) {
    fprintf(stderr, "steerd-client: cannot create the client (name longer than %d bytes?)\n",
            PROTO_MAX_NAME_BYTES);
    *exit_code = EXIT_USAGE;
    return NULL;
  }
  int r = steerd_client_connect(c, a->host, a->port);
  if (r < 0) {
    char what[300];
    snprintf(what, sizeof what, "connect %s:%u", a->host, (unsigned)a->port);
    *exit_code = report(c, what, r, NULL);
    if (r == STEERD_CLIENT_ETIMEDOUT)
      fprintf(stderr,
              "steerd-client: no answer from %s:%u (UDP) within %u ms: is steerd running there? Compare "
              "--host/--port (STEERD_HOST/STEERD_PORT) with the server's 'listening on' log line; a firewall "
              "dropping UDP looks the same\n",
              a->host, (unsigned)a->port, (unsigned)a->timeout_ms);
    steerd_client_destroy(c);
    return NULL;
  }
  return c;
}

void close_client(steerd_client *c) {
  if (c == NULL || c == g_session)
    return;
  steerd_client_disconnect(c, 500);
  steerd_client_destroy(c);
}

/* Connects, sends one command, waits for its reply; prints errors. */
static int run_command(const args *a, const proto_command *cmd, proto_server_msg *reply) {
  int code = 0;
  steerd_client *c = open_client(a, NULL, &code);
  if (c == NULL)
    return code;
  int r = steerd_client_command_wait(c, cmd, a->timeout_ms, reply);
  if (r < 0)
    code = report(c, proto_msg_type_name(cmd->type), r, reply);
  close_client(c);
  return code;
}

static int parse_agent_id(const args *a, proto_id *id) {
  uint32_t v;
  if (parse_u32(a->pos[0], &v) != 0 || v == 0)
    return bad_value(a, "agent id", a->pos[0]);
  *id = v;
  return 0;
}

/* Fills the behaviour options shared by spawn and target. */
static int parse_behaviour(const args *a, proto_behaviour *b) {
  const char *k = opt_get(a, "behaviour");
  int kind = k != NULL ? find_name(proto_behaviour_name, PROTO_BEHAVIOUR_COUNT, k) : -1;
  if (kind < 0 || kind == PROTO_BEHAVIOUR_FOLLOW_PATH)
    return bad_value(a, "--behaviour", k);
  b->kind = (uint8_t)kind;
  const char *t = opt_get(a, "target");
  const char *ta = opt_get(a, "target-agent");
  const char *ta2 = opt_get(a, "target-agent2");
  const char *o = opt_get(a, "orientation");
  if (t != NULL && ta != NULL) {
    fprintf(stderr, "steerd-client %s: --target and --target-agent exclude each other\n", a->cmd);
    return EXIT_USAGE;
  }
  if (t != NULL) {
    if (parse_xy(t, &b->target) != 0)
      return bad_value(a, "--target", t);
    b->present |= PROTO_BHV_TARGET;
  }
  if (ta != NULL) {
    uint32_t id;
    if (parse_u32(ta, &id) != 0 || id == 0)
      return bad_value(a, "--target-agent", ta);
    b->target_agent = id;
    b->present |= PROTO_BHV_TARGET_AGENT;
  }
  if (ta2 != NULL) {
    uint32_t id;
    if (ta == NULL || parse_u32(ta2, &id) != 0 || id == 0)
      return bad_value(a, "--target-agent2 (needs --target-agent)", ta2);
    b->target_agent2 = id;
    b->present |= PROTO_BHV_TARGET_AGENT2;
  }
  if (o != NULL) {
    if (parse_float(o, &b->orientation) != 0)
      return bad_value(a, "--orientation", o);
    b->present |= PROTO_BHV_ORIENTATION;
  }
  return 0;
}

static int cmd_spawn(const args *a) {
  static const char *const allowed[] = {"model", "x", "y", "behaviour", "target", "target-agent", NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  static proto_command cmd; /* large (paths): not on the stack */
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SPAWN;
  proto_spawn *s = &cmd.spawn;
  const char *m = opt_get(a, "model");
  int model = m != NULL ? find_name(proto_model_name, PROTO_MODEL_COUNT, m) : -1;
  if (model < 0)
    return bad_value(a, "--model", m);
  s->model = (uint8_t)model;
  if (parse_float(opt_get(a, "x"), &s->position.x) != 0)
    return bad_value(a, "--x", opt_get(a, "x"));
  if (parse_float(opt_get(a, "y"), &s->position.y) != 0)
    return bad_value(a, "--y", opt_get(a, "y"));
  if (opt_get(a, "behaviour") != NULL) {
    int r = parse_behaviour(a, &s->behaviour);
    if (r != 0)
      return r;
    s->present |= PROTO_SPAWN_BEHAVIOUR;
  } else if (opt_get(a, "target") != NULL || opt_get(a, "target-agent") != NULL) {
    fprintf(stderr, "steerd-client spawn: a target needs --behaviour\n");
    return EXIT_USAGE;
  }
  proto_server_msg reply;
  int code = run_command(a, &cmd, &reply);
  if (code == 0)
    printf("%lu\n", (unsigned long)reply.ack.agent);
  return code;
}

static int cmd_target(const args *a) {
  static const char *const allowed[] = {"behaviour",     "target",      "target-agent",
                                        "target-agent2", "orientation", NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SET_BEHAVIOUR;
  int r = parse_agent_id(a, &cmd.set_behaviour.agent);
  if (r == 0)
    r = parse_behaviour(a, &cmd.set_behaviour.behaviour);
  if (r != 0)
    return r;
  return run_command(a, &cmd, NULL);
}

static int cmd_path(const args *a) {
  static const char *const allowed[] = {"points", "radius", "mode", "cornering", NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SET_PATH;
  proto_set_path *sp = &cmd.set_path;
  int r = parse_agent_id(a, &sp->agent);
  if (r != 0)
    return r;
  const char *pts = opt_get(a, "points");
  if (pts == NULL || parse_points(pts, sp->path.points, PROTO_MAX_PATH_POINTS, &sp->path.count) != 0)
    return bad_value(a, "--points", pts);
  sp->path.radius = 1.0f;
  const char *rad = opt_get(a, "radius");
  if (rad != NULL && (parse_float(rad, &sp->path.radius) != 0 || !(sp->path.radius > 0.0f)))
    return bad_value(a, "--radius", rad);
  const char *mode = opt_get(a, "mode");
  int mi = mode != NULL ? find_name(proto_path_mode_name, PROTO_PATH_MODE_COUNT, mode) : PROTO_PATH_ONCE;
  if (mi < 0)
    return bad_value(a, "--mode", mode);
  sp->path.mode = (uint8_t)mi;
  const char *corner = opt_get(a, "cornering");
  int ci = corner != NULL ? find_name(proto_cornering_name, PROTO_CORNER_COUNT, corner) : PROTO_CORNER_NONE;
  if (ci < 0)
    return bad_value(a, "--cornering", corner);
  sp->path.cornering = (uint8_t)ci;
  return run_command(a, &cmd, NULL);
}

static int cmd_goto(const args *a) {
  static const char *const allowed[] = {"target",          "target-agent", "node-radius", "cornering",
                                        "replan-distance", "wait",         NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SET_BEHAVIOUR;
  proto_behaviour *b = &cmd.set_behaviour.behaviour;
  b->kind = PROTO_BEHAVIOUR_GOTO;
  int r = parse_agent_id(a, &cmd.set_behaviour.agent);
  if (r != 0)
    return r;
  const char *t = opt_get(a, "target"), *ta = opt_get(a, "target-agent");
  if ((t == NULL) == (ta == NULL)) {
    fprintf(stderr, "steerd-client goto: give one of --target X,Y and --target-agent ID\n");
    return EXIT_USAGE;
  }
  if (t != NULL) {
    if (parse_xy(t, &b->target) != 0)
      return bad_value(a, "--target", t);
    b->present |= PROTO_BHV_TARGET;
  } else {
    if (parse_u32(ta, &b->target_agent) != 0 || b->target_agent == 0)
      return bad_value(a, "--target-agent", ta);
    b->present |= PROTO_BHV_TARGET_AGENT;
  }
  const char *nr = opt_get(a, "node-radius"), *co = opt_get(a, "cornering"),
             *rd = opt_get(a, "replan-distance");
  if (nr != NULL) {
    if (parse_float(nr, &b->node_radius) != 0 || !(b->node_radius > 0.0f))
      return bad_value(a, "--node-radius", nr);
    b->present |= PROTO_BHV_NODE_RADIUS;
  }
  if (co != NULL) {
    int ci = find_name(proto_cornering_name, PROTO_CORNER_COUNT, co);
    if (ci < 0)
      return bad_value(a, "--cornering", co);
    b->cornering = (uint8_t)ci;
    b->present |= PROTO_BHV_CORNERING;
  }
  if (rd != NULL) {
    if (parse_float(rd, &b->replan_distance) != 0 || !(b->replan_distance >= 0.0f))
      return bad_value(a, "--replan-distance", rd);
    b->present |= PROTO_BHV_REPLAN_DISTANCE;
  }
  float wait_s = 0.0f;
  const char *w = opt_get(a, "wait");
  if (w != NULL && (parse_float(w, &wait_s) != 0 || !(wait_s >= 0.0f && wait_s <= 3600.0f)))
    return bad_value(a, "--wait", w);
  int code = 0;
  steerd_client_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.on_event = goto_on_event;
  steerd_client *c = open_client(a, &cb, &code);
  if (c == NULL)
    return code;
  memset(&g_goto, 0, sizeof g_goto);
  g_goto.agent = cmd.set_behaviour.agent;
  proto_server_msg reply;
  r = steerd_client_command_wait(c, &cmd, a->timeout_ms, &reply);
  if (r < 0) {
    code = report(c, "goto", r, &reply);
  } else if (w != NULL) {
    uint64_t end = steerd_client_now_us() + (uint64_t)((double)wait_s * 1e6);
    while (!g_goto.seen && !g_stop && steerd_client_now_us() < end && r >= 0)
      r = steerd_client_service(c, 10);
    if (!g_goto.seen) {
      fprintf(stderr, "steerd-client goto: no answer for agent %lu within %g s\n",
              (unsigned long)g_goto.agent, (double)wait_s);
      code = r < 0 ? report(c, "goto", r, NULL) : EXIT_REPLY_ERROR;
    } else {
      print_event(NULL, &g_goto.ev);
      if (g_goto.ev.code == PROTO_EVENT_UNREACHABLE) {
        code = EXIT_REPLY_ERROR;
      } else {
        proto_command q;
        memset(&q, 0, sizeof q);
        q.type = PROTO_MSG_QUERY;
        q.query.agent = g_goto.agent;
        r = steerd_client_command_wait(c, &q, a->timeout_ms, &reply);
        if (r < 0)
          code = report(c, "query", r, &reply);
        else
          print_agent(&reply.ack.query);
      }
    }
  }
  g_goto.agent = 0;
  close_client(c);
  return code;
}

/* despawn, stop, query: one agent id. */
static int cmd_agent(const args *a, uint8_t type) {
  static const char *const allowed[] = {NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = type;
  int r = parse_agent_id(a, &cmd.query.agent); /* despawn, stop, query share proto_agent_cmd */
  if (r != 0)
    return r;
  proto_server_msg reply;
  int code = run_command(a, &cmd, &reply);
  if (code == 0 && type == PROTO_MSG_QUERY)
    print_agent(&reply.ack.query);
  return code;
}

/* ---- params ------------------------------------------------------------------------- */

/* The fields behind proto_param_name(i) (bit 1 << i of proto_params.present), in its order. */
static const size_t param_offsets[PROTO_PARAM_COUNT] = {
    offsetof(proto_param_values, time_to_target),
    offsetof(proto_param_values, target_radius),
    offsetof(proto_param_values, slow_radius),
    offsetof(proto_param_values, kinematic_time_to_target),
    offsetof(proto_param_values, align_target_radius),
    offsetof(proto_param_values, align_slow_radius),
    offsetof(proto_param_values, align_time_to_target),
    offsetof(proto_param_values, max_prediction),
    offsetof(proto_param_values, panic_radius),
    offsetof(proto_param_values, wander_offset),
    offsetof(proto_param_values, wander_radius),
    offsetof(proto_param_values, wander_rate),
    offsetof(proto_param_values, separation_radius),
    offsetof(proto_param_values, turn_trigger_distance),
    offsetof(proto_param_values, path_recover_strength)};
/* The fields behind proto_limit_name(i) (bit 1 << i of proto_limits.present). */
static const size_t limit_offsets[PROTO_LIMIT_COUNT] = {
    offsetof(proto_limit_values, max_speed), offsetof(proto_limit_values, max_acceleration),
    offsetof(proto_limit_values, max_rotation), offsetof(proto_limit_values, max_angular_acceleration),
    offsetof(proto_limit_values, radius)};

/* One KEY=VALUE of params --set into the command; -1 for a key or value it cannot take. */
static int params_key(proto_set_params *sp, const char *key, const char *value) {
  for (uint32_t i = 0; i < PROTO_LIMIT_COUNT; i++)
    if (strcmp(key, proto_limit_name(i)) == 0) {
      sp->limits.present |= 1u << i;
      return parse_float(value, (float *)((char *)&sp->limits.v + limit_offsets[i]));
    }
  for (uint32_t i = 0; i < PROTO_PARAM_COUNT; i++)
    if (strcmp(key, proto_param_name(i)) == 0) {
      sp->params.present |= 1u << i;
      return parse_float(value, (float *)((char *)&sp->params.v + param_offsets[i]));
    }
  proto_tuning *t = &sp->params.tuning;
  if (strcmp(key, "stuck_reaction") == 0) {
    int r = find_name(proto_stuck_reaction_name, PROTO_STUCK_REACTION_COUNT, value);
    if (r < 0)
      return -1;
    t->stuck_reaction = (uint8_t)r;
    sp->params.present |= PROTO_PARAM_STUCK_REACTION;
    return 0;
  }
  if (strcmp(key, "arrival") == 0) {
    int r = find_name(proto_arrival_name, PROTO_ARRIVAL_COUNT, value);
    if (r < 0)
      return -1;
    t->arrival = (uint8_t)r;
    sp->params.present |= PROTO_PARAM_ARRIVAL;
    return 0;
  }
  if (strcmp(key, "avoid_priority") == 0) {
    uint32_t v;
    if (parse_u32(value, &v) != 0 || v > 255)
      return -1;
    t->avoid_priority = (uint8_t)v;
    sp->params.present |= PROTO_PARAM_AVOID_PRIORITY;
    return 0;
  }
  float *f = NULL;
  uint32_t bit = 0;
  if (strcmp(key, "avoid_weight") == 0)
    f = &t->avoid_weight, bit = PROTO_PARAM_AVOID_WEIGHT;
  else if (strcmp(key, "avoid_horizon") == 0)
    f = &t->avoid_horizon, bit = PROTO_PARAM_AVOID_HORIZON;
  else if (strcmp(key, "wall_lookahead") == 0)
    f = &t->wall_lookahead, bit = PROTO_PARAM_WALL_LOOKAHEAD;
  else if (strcmp(key, "wall_margin") == 0)
    f = &t->wall_margin, bit = PROTO_PARAM_WALL_MARGIN;
  else if (strcmp(key, "stuck_time") == 0)
    f = &t->stuck_time, bit = PROTO_PARAM_STUCK_TIME;
  if (f == NULL)
    return -1;
  sp->params.present |= bit;
  return parse_float(value, f);
}

static int cmd_params(const args *a) {
  static const char *const allowed[] = {"set", NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SET_PARAMS;
  int r = parse_agent_id(a, &cmd.set_params.agent);
  if (r != 0)
    return r;
  const char *set = opt_get(a, "set");
  if (set == NULL || *set == '\0') {
    fprintf(stderr,
            "steerd-client params: --set \"KEY=VALUE,...\" is required (see steerd-client params --help)\n");
    return EXIT_USAGE;
  }
  char buf[1024];
  if (strlen(set) >= sizeof buf)
    return bad_value(a, "--set (too long)", set);
  strcpy(buf, set);
  for (char *save = NULL, *item = strtok_r(buf, ",", &save); item != NULL;
       item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    if (eq != NULL)
      *eq = '\0';
    if (eq == NULL || params_key(&cmd.set_params, item, eq + 1) != 0) {
      fprintf(stderr,
              "steerd-client params: cannot set '%s'%s%s: a key is a limit, a parameter or a tuning key "
              "with a number (stuck_reaction: report, nudge or give_up; arrival: point, settle or pass); see "
              "steerd-client params --help\n",
              item, eq != NULL ? " to " : " (KEY=VALUE)", eq != NULL ? eq + 1 : "");
      return EXIT_USAGE;
    }
  }
  proto_server_msg reply;
  int code = run_command(a, &cmd, &reply);
  if (code == 0)
    printf("agent %lu: parameters set\n", (unsigned long)cmd.set_params.agent);
  return code;
}

/* ---- list --------------------------------------------------------------------------- */

/* The ids of the first complete snapshot `list` sees. */
static struct {
  proto_id *ids;
  uint32_t count;
  int seen, failed;
} g_list;

static void list_on_frame(void *user, const steerd_client_frame *f) {
  (void)user;
  if (g_list.seen)
    return;
  g_list.seen = 1;
  g_list.ids = f->count > 0 ? malloc(f->count * sizeof *g_list.ids) : NULL;
  if (f->count > 0 && g_list.ids == NULL) {
    g_list.failed = 1;
    return;
  }
  for (uint32_t i = 0; i < f->count; i++)
    g_list.ids[i] = f->poses[i].id;
  g_list.count = f->count;
}

static int compare_ids(const void *x, const void *y) {
  proto_id a = *(const proto_id *)x, b = *(const proto_id *)y;
  return (a > b) - (a < b);
}

static int cmd_list(const args *a) {
  static const char *const allowed[] = {"limit", NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  uint32_t limit = 100;
  const char *l = opt_get(a, "limit");
  if (l != NULL && (parse_u32(l, &limit) != 0 || limit == 0))
    return bad_value(a, "--limit", l);
  memset(&g_list, 0, sizeof g_list);
  steerd_client_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.on_snapshot_frame = list_on_frame;
  int code = 0;
  steerd_client *c = open_client(a, &cb, &code);
  if (c == NULL)
    return code;
  uint64_t end = steerd_client_now_us() + (uint64_t)a->timeout_ms * 1000u;
  int r = 0;
  while (!g_list.seen && !g_stop && r >= 0 && steerd_client_now_us() < end)
    r = steerd_client_service(c, 50);
  if (r < 0 || g_list.failed || !g_list.seen) {
    code = r < 0 ? report(c, "list", r, NULL) : EXIT_CONNECTION;
    if (r >= 0)
      fprintf(stderr, "steerd-client list: %s\n",
              g_list.failed ? "out of memory" : "no snapshot arrived within --timeout");
    free(g_list.ids);
    close_client(c);
    return code;
  }
  if (g_list.count > 1) /* ids is NULL for an empty world */
    qsort(g_list.ids, g_list.count, sizeof *g_list.ids, compare_ids);
  printf("%-10s %-18s %-8s %10s %10s\n", "id", "behaviour", "owner", "x", "y");
  uint32_t shown = 0, gone = 0;
  static proto_command cmd;
  for (uint32_t i = 0; i < g_list.count && shown < limit && !g_stop; i++) {
    memset(&cmd, 0, sizeof cmd);
    cmd.type = PROTO_MSG_QUERY;
    cmd.query.agent = g_list.ids[i];
    proto_server_msg reply;
    r = steerd_client_command_wait(c, &cmd, a->timeout_ms, &reply);
    if (r == STEERD_CLIENT_EREPLY && reply.type == PROTO_MSG_ERROR &&
        reply.error.code == PROTO_ERR_NO_SUCH_AGENT) {
      gone++; /* despawned since the snapshot */
      continue;
    }
    if (r < 0) {
      code = report(c, "QUERY", r, &reply);
      break;
    }
    const proto_agent_report *q = &reply.ack.query;
    const char *bhv = proto_behaviour_name(q->behaviour);
    printf("%-10lu %-18s %-8lu %10.2f %10.2f\n", (unsigned long)q->agent, bhv ? bhv : "?",
           (unsigned long)q->owner, (double)q->state.position.x, (double)q->state.position.y);
    shown++;
  }
  fflush(stdout);
  fprintf(stderr, "steerd-client list: %u agents in the snapshot, %u listed, %u despawned meanwhile%s\n",
          (unsigned)g_list.count, (unsigned)shown, (unsigned)gone,
          code == 0 && shown + gone < g_list.count ? " (--limit N lists more)" : "");
  free(g_list.ids);
  g_list.ids = NULL;
  close_client(c);
  return code;
}

/* ---- the map ---------------------------------------------------------------------- */

static void print_point(proto_vec2 p) { printf("[%.9g, %.9g]", (double)p.x, (double)p.y); }

/* map: waits for the copy of the map to be current, prints it as a map file. */
static int cmd_map(const args *a) {
  static const char *const allowed[] = {NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  int code = 0;
  steerd_client *c = open_client(a, NULL, &code);
  if (c == NULL)
    return code;
  const steerd_mapcopy *m = steerd_client_map(c);
  uint64_t end = steerd_client_now_us() + (uint64_t)a->timeout_ms * 1000u;
  while (m != NULL && !steerd_mapcopy_current(m) && steerd_client_now_us() < end && !g_stop) {
    int r = steerd_client_service(c, 20);
    if (r < 0) {
      code = report(c, "MAP", r, NULL);
      close_client(c);
      return code;
    }
  }
  if (m == NULL || !steerd_mapcopy_current(m)) {
    steerd_client_stats st;
    steerd_client_get_stats(c, &st);
    fprintf(stderr, "steerd-client map: no complete map within %u ms (%llu parts received%s)\n",
            (unsigned)a->timeout_ms, (unsigned long long)st.map_parts,
            st.map_overflows ? ", larger than this client keeps" : "");
    close_client(c);
    return EXIT_CONNECTION;
  }
  printf("{\"format\": \"steerd-map\", \"version\": 1,\n \"obstacles\": [");
  for (uint32_t i = 0; i < steerd_mapcopy_count(m); i++) {
    proto_obstacle o = steerd_mapcopy_get(m, i);
    printf("%s\n   {\"id\": %lu, \"type\": \"%s\", ", i ? "," : "", (unsigned long)o.id,
           proto_obstacle_kind_name(o.kind));
    if (o.kind == PROTO_OBSTACLE_CIRCLE) {
      printf("\"center\": ");
      print_point(o.points[0]);
      printf(", \"radius\": %.9g}", (double)o.radius);
      continue;
    }
    printf("\"points\": [");
    for (uint32_t k = 0; k < o.count; k++) {
      if (k)
        printf(", ");
      print_point(o.points[k]);
    }
    printf("]}");
  }
  printf("]}\n");
  fprintf(stderr, "steerd-client: map version %lu, %lu obstacles\n", (unsigned long)steerd_mapcopy_version(m),
          (unsigned long)steerd_mapcopy_count(m));
  close_client(c);
  return 0;
}

static int cmd_add_obstacle(const args *a) {
  static const char *const allowed[] = {"id", "type", "center", "radius", "points", NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_ADD_OBSTACLE;
  proto_add_obstacle *o = &cmd.add_obstacle;
  const char *id = opt_get(a, "id");
  if (id == NULL || parse_u32(id, &o->id) != 0 || o->id == 0)
    return bad_value(a, "--id", id);
  const char *t = opt_get(a, "type");
  int kind = t != NULL ? find_name(proto_obstacle_kind_name, PROTO_OBSTACLE_KIND_COUNT, t) : -1;
  if (kind < 0)
    return bad_value(a, "--type", t);
  o->kind = (uint8_t)kind;
  if (kind == PROTO_OBSTACLE_CIRCLE) {
    const char *c = opt_get(a, "center"), *r = opt_get(a, "radius");
    if (c == NULL || parse_xy(c, &o->points[0]) != 0)
      return bad_value(a, "--center", c);
    if (r == NULL || parse_float(r, &o->radius) != 0 || !(o->radius > 0.0f))
      return bad_value(a, "--radius", r);
    if (opt_get(a, "points") != NULL)
      return bad_value(a, "--points (not for a circle)", opt_get(a, "points"));
    o->count = 1;
  } else {
    const char *p = opt_get(a, "points");
    uint32_t least = kind == PROTO_OBSTACLE_POLYGON ? 3u : 2u;
    if (p == NULL || parse_points(p, o->points, PROTO_MAX_OBSTACLE_POINTS, &o->count) != 0 ||
        o->count < least)
      return bad_value(a, "--points", p);
    if (opt_get(a, "center") != NULL || opt_get(a, "radius") != NULL)
      return bad_value(a, "--center/--radius (only for a circle)", t);
  }
  proto_server_msg reply;
  int code = run_command(a, &cmd, &reply);
  if (code == 0)
    printf("obstacle %lu added: map version %lu, %lu agents moved out of it\n",
           (unsigned long)reply.ack.obstacle, (unsigned long)reply.ack.map_version,
           (unsigned long)reply.ack.moved);
  return code;
}

static int cmd_remove_obstacle(const args *a) {
  static const char *const allowed[] = {NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_REMOVE_OBSTACLE;
  if (parse_u32(a->pos[0], &cmd.remove_obstacle.id) != 0 || cmd.remove_obstacle.id == 0)
    return bad_value(a, "obstacle id", a->pos[0]);
  proto_server_msg reply;
  int code = run_command(a, &cmd, &reply);
  if (code == 0)
    printf("obstacle %lu removed: map version %lu\n", (unsigned long)reply.ack.obstacle,
           (unsigned long)reply.ack.map_version);
  return code;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

static int cmd_ping(const args *a) {
  static const char *const allowed[] = {"count", NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  uint32_t count = 4;
  const char *cs = opt_get(a, "count");
  if (cs != NULL && (parse_u32(cs, &count) != 0 || count == 0 || count > 100000))
    return bad_value(a, "--count", cs);
  uint64_t *rtts = calloc(count, sizeof *rtts);
  if (rtts == NULL)
    return EXIT_CONNECTION;
  int code = 0;
  steerd_client *c = open_client(a, NULL, &code);
  uint32_t got = 0;
  for (uint32_t i = 0; c != NULL && i < count && !g_stop; i++) {
    uint64_t sent = steerd_client_now_us();
    int r = steerd_client_ping(c, a->timeout_ms, &rtts[got]);
    if (r < 0) {
      code = report(c, "PING", r, NULL);
      break;
    }
    printf("ping %u: rtt %.3f ms\n", (unsigned)(i + 1), (double)rtts[got] / 1000.0);
    fflush(stdout);
    got++;
    /* Pace the pings 100 ms apart, still servicing the connection. */
    uint64_t next = sent + 100000u;
    for (uint64_t now = steerd_client_now_us(); i + 1 < count && now < next && !g_stop;
         now = steerd_client_now_us()) {
      r = steerd_client_service(c, (uint32_t)((next - now + 999u) / 1000u));
      if (r < 0)
        break;
    }
  }
  if (got > 0) {
    qsort(rtts, got, sizeof *rtts, cmp_u64);
    double median =
        got % 2 ? (double)rtts[got / 2] : ((double)rtts[got / 2 - 1] + (double)rtts[got / 2]) / 2.0;
    steerd_client_stats st;
    steerd_client_get_stats(c, &st);
    printf("median %.3f ms over %u pings (min %.3f, max %.3f, smoothed %.3f); clock offset %lld us\n",
           median / 1000.0, (unsigned)got, (double)rtts[0] / 1000.0, (double)rtts[got - 1] / 1000.0,
           st.rtt_smoothed_us / 1000.0, (long long)st.clock_offset_us);
  }
  close_client(c);
  free(rtts);
  return code;
}

/* ---- Shell and main ------------------------------------------------------ */

static int dispatch(const args *a);

/* Splits a line into words in place; "double quotes" group words (for --points). */
static int split_line(char *line, char **words, int max) {
  int n = 0;
  char *p = line;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
      p++;
    if (*p == '\0' || *p == '#')
      return n;
    if (n >= max)
      return -1;
    char *out = p;
    words[n++] = p;
    int quoted = 0;
    while (*p != '\0' && (quoted || (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r'))) {
      if (*p == '"')
        quoted = !quoted;
      else
        *out++ = *p;
      p++;
    }
    if (quoted)
      return -1;
    int end = *p == '\0';
    *out = '\0';
    if (end)
      return n;
    p++;
  }
}

/* Commands from stdin, one a line, over one connection. */
static int cmd_shell(const args *a) {
  static const char *const allowed[] = {NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  int code = 0;
  steerd_client_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.on_event = goto_on_event; /* goto --wait in the session */
  g_session = open_client(a, &cb, &code);
  if (g_session == NULL)
    return code;
  int tty = isatty(STDIN_FILENO);
  fprintf(stderr, "steerd-client: connected as client %lu; commands from stdin%s\n",
          (unsigned long)steerd_client_welcome(g_session)->client_id,
          tty ? " (help lists them, quit leaves)" : "");
  char line[4096];
  for (;;) {
    if (tty) {
      fputs("steerd> ", stderr);
      fflush(stderr);
    }
    if (g_stop || fgets(line, sizeof line, stdin) == NULL)
      break;
    char *words[64];
    words[0] = "steerd-client";
    int n = split_line(line, words + 1, 63);
    if (n == 0)
      continue;
    if (strcmp(words[1], "quit") == 0 || strcmp(words[1], "exit") == 0)
      break;
    if (strcmp(words[1], "help") == 0) {
      const cmd_help *h = n > 1 ? find_command(words[2]) : NULL;
      if (h != NULL) {
        fputs(h->text, stdout);
      } else {
        if (n > 1)
          printf("no command '%s'; ", words[2]);
        printf("commands (watch, bots and shell are not available here):\n");
        for (size_t i = 0; i < command_count; i++)
          if (strcmp(commands[i].name, "watch") != 0 && strcmp(commands[i].name, "bots") != 0 &&
              strcmp(commands[i].name, "shell") != 0)
            fputs(commands[i].text, stdout);
        printf("  help [COMMAND]   this text, or one command's\n  quit, exit       leave\n");
      }
      fflush(stdout);
      continue;
    }
    args sub;
    if (n < 0 || parse_args(n + 1, words, &sub) != 0) {
      fprintf(stderr, "steerd-client shell: cannot parse the line\n");
      code = code != 0 ? code : EXIT_USAGE;
      continue;
    }
    if (strcmp(sub.cmd, "watch") == 0 || strcmp(sub.cmd, "bots") == 0 || strcmp(sub.cmd, "shell") == 0 ||
        strcmp(sub.cmd, "list") == 0) {
      fprintf(stderr, "steerd-client shell: %s is not available in a shell\n", sub.cmd);
      code = code != 0 ? code : EXIT_USAGE;
      continue;
    }
    sub.timeout_ms = a->timeout_ms;
    int r = dispatch(&sub);
    fflush(stdout);
    if (r != 0 && (code == 0 || r == EXIT_CONNECTION))
      code = r;
    if (steerd_client_get_state(g_session) != STEERD_CLIENT_WELCOMED)
      break;                             /* the connection is gone */
    steerd_client_service(g_session, 0); /* drop what piled up meanwhile */
  }
  steerd_client *c = g_session;
  g_session = NULL;
  if (steerd_client_get_state(c) == STEERD_CLIENT_WELCOMED)
    steerd_client_disconnect(c, 500);
  steerd_client_destroy(c);
  return code;
}

int main(int argc, char **argv) {
  args a;
  if (parse_args(argc, argv, &a) != 0)
    return EXIT_USAGE;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  if (strcmp(a.cmd, "shell") == 0)
    return cmd_shell(&a);
  return dispatch(&a);
}

static int dispatch(const args *ap) {
  const args a = *ap;
  if (strcmp(a.cmd, "watch") == 0)
    return cmd_watch(&a);
  if (strcmp(a.cmd, "spawn") == 0)
    return cmd_spawn(&a);
  if (strcmp(a.cmd, "target") == 0)
    return cmd_target(&a);
  if (strcmp(a.cmd, "path") == 0)
    return cmd_path(&a);
  if (strcmp(a.cmd, "goto") == 0)
    return cmd_goto(&a);
  if (strcmp(a.cmd, "despawn") == 0)
    return cmd_agent(&a, PROTO_MSG_DESPAWN);
  if (strcmp(a.cmd, "stop") == 0)
    return cmd_agent(&a, PROTO_MSG_STOP);
  if (strcmp(a.cmd, "query") == 0)
    return cmd_agent(&a, PROTO_MSG_QUERY);
  if (strcmp(a.cmd, "list") == 0)
    return cmd_list(&a);
  if (strcmp(a.cmd, "params") == 0)
    return cmd_params(&a);
  if (strcmp(a.cmd, "ping") == 0)
    return cmd_ping(&a);
  if (strcmp(a.cmd, "map") == 0)
    return cmd_map(&a);
  if (strcmp(a.cmd, "add-obstacle") == 0)
    return cmd_add_obstacle(&a);
  if (strcmp(a.cmd, "remove-obstacle") == 0)
    return cmd_remove_obstacle(&a);
  if (strcmp(a.cmd, "bots") == 0)
    return cmd_bots(&a);
  if (strcmp(a.cmd, "top") == 0)
    return cmd_top(&a);
  if (strcmp(a.cmd, "help") == 0) {
    const cmd_help *h = a.npos > 0 ? find_command(a.pos[0]) : NULL;
    if (h != NULL)
      usage_command(stdout, h);
    else
      usage(stdout);
    return 0;
  }
  fprintf(stderr, "steerd-client: unknown command '%s' (see --help)\n", a.cmd);
  return EXIT_USAGE;
}
