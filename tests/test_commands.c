/* test_commands.c: the clients' command inboxes and the per-tick command
 * budget (PROTOCOL.md 4, Command queue) on the real server binary over real
 * ENet on 127.0.0.1.
 *
 * With --command-budget-us 1 and --command-spare 0 the server runs one
 * command per tick, whoever sent it, so what the tests count does not hang on the machine's speed: a
 * flood fills its sender's inbox within a tick, and the order in which the
 * clients are served is the scheduler's, not the clock's. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "world.h"
#include "check_run.h"
#include "client.h"
#include "protocol.h"
#include "steerd_proc.h"

#define FLOOD 200u

typedef struct replies {
  uint32_t acks, busy, other_errors;
  uint32_t first_busy_rid; /* request_id of the first BUSY */
  uint32_t last_ack_rid;   /* of the last ACK, to check their order */
  int acks_in_order;       /* every ACK's request_id above the one before */
  int busy_well_formed;    /* every BUSY: field nil, message starting "busy" */
  uint8_t agent_ids_ok;    /* every ACK of a SPAWN named an agent */
  uint64_t frames;         /* complete snapshots */
  uint32_t frame_agents;   /* agents in the last one */
} replies;

static void on_frame(void *user, const steerd_client_frame *f) {
  replies *r = user;
  r->frames++;
  r->frame_agents = f->count;
}

static void on_reply(void *user, const proto_server_msg *m) {
  replies *r = user;
  if (m->type == PROTO_MSG_ERROR) {
    if (m->error.code == PROTO_ERR_BUSY) {
      if (!r->busy)
        r->first_busy_rid = m->error.request_id;
      r->busy++;
      if (m->error.has_field || strncmp(m->error.message, "busy", 4) != 0 || m->error.request_id == 0)
        r->busy_well_formed = 0;
    } else {
      r->other_errors++;
    }
    return;
  }
  if (m->ack.request_id <= r->last_ack_rid)
    r->acks_in_order = 0;
  r->last_ack_rid = m->ack.request_id;
  if (m->ack.command == PROTO_MSG_SPAWN && m->ack.agent == 0)
    r->agent_ids_ok = 0;
  r->acks++;
}

static steerd_client *connect_client(const steerd_proc *p, const char *name, replies *r) {
  memset(r, 0, sizeof *r);
  r->acks_in_order = r->busy_well_formed = 1;
  r->agent_ids_ok = 1;
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = name;
  cfg.max_agents = 4096;
  cfg.callbacks.on_reply = on_reply;
  cfg.callbacks.on_snapshot_frame = on_frame;
  cfg.user = r;
  steerd_client *c = steerd_client_create(&cfg);
  ck_assert_ptr_nonnull(c);
  int rc = steerd_client_connect(c, "127.0.0.1", p->port);
  ck_assert_msg(rc == 0, "connect: %s", steerd_client_strerror(rc));
  return c;
}

static void start(steerd_proc *p, const char *queue) {
  const char *const args[] = {"--no-demo", "--rate-limit",
                              "1000000",   "--rate-burst",
                              "1000000",   "--command-queue",
                              queue,       "--command-budget-us",
                              "1",         "--command-spare",
                              "0",         "--max-agents-per-client",
                              "4096",      NULL};
  ck_assert_msg(steerd_proc_start(p, STEERD_BINARY, args, 20000) == 0, "the server did not start");
}

static proto_command spawn_at(float x) {
  proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SPAWN;
  cmd.spawn.model = STEER_MODEL_KINEMATIC;
  cmd.spawn.position = proto_v2(x, 0.0f);
  return cmd;
}

static void service_until(steerd_client *c, steerd_client *other, const replies *r, uint32_t replies_wanted,
                          uint32_t timeout_ms) {
  uint64_t end = steerd_proc_now_ms() + timeout_ms;
  while (r->acks + r->busy + r->other_errors < replies_wanted && steerd_proc_now_ms() < end) {
    steerd_client_service(c, 5);
    if (other)
      steerd_client_service(other, 0);
  }
}

/* The world's agent count, from two complete snapshots taken after every
 * reply has come. */
static uint32_t agents_in_world(steerd_client *c, replies *r) {
  uint64_t seen = r->frames, end = steerd_proc_now_ms() + 5000;
  while (r->frames < seen + 2 && steerd_proc_now_ms() < end)
    steerd_client_service(c, 10);
  ck_assert_msg(r->frames >= seen + 2, "no complete snapshots");
  return r->frame_agents;
}

/* A flood past --command-queue: the commands that fit are run and ACKed in
 * order, the rest are answered BUSY with their request_id and nothing else
 * (not applied: the world holds exactly the ACKed agents), and every command
 * gets exactly one reply. */
START_TEST(a_flood_past_the_inbox_gets_busy_and_loses_nothing) {
  steerd_proc p;
  start(&p, "8");
  replies r;
  steerd_client *c = connect_client(&p, "flooder", &r);
  uint32_t first = 0;
  for (uint32_t i = 0; i < FLOOD; i++) {
    proto_command cmd = spawn_at(-40.0f + (float)(i % 80));
    uint32_t rid;
    ck_assert_int_eq(steerd_client_send(c, &cmd, &rid), 0);
    if (i == 0)
      first = rid;
  }
  service_until(c, NULL, &r, FLOOD, 30000);
  ck_assert_uint_eq(r.acks + r.busy + r.other_errors, FLOOD);
  ck_assert_uint_eq(r.other_errors, 0);
  ck_assert_uint_gt(r.busy, FLOOD / 2); /* one command a tick runs: most of the flood finds no room */
  ck_assert_uint_ge(r.acks, 8);         /* what fitted in the inbox ran */
  ck_assert(r.acks_in_order);
  ck_assert(r.busy_well_formed);
  ck_assert(r.agent_ids_ok);
  ck_assert_uint_gt(r.first_busy_rid, first);
  /* Nothing refused was applied. */
  ck_assert_uint_eq(agents_in_world(c, &r), r.acks);
  /* After the flood, the client's commands run again. */
  replies before = r;
  proto_command cmd = spawn_at(10.0f);
  proto_server_msg reply;
  ck_assert_int_eq(steerd_client_command_wait(c, &cmd, 5000, &reply), 0);
  ck_assert_uint_eq(reply.type, PROTO_MSG_ACK);
  ck_assert_uint_eq(r.busy, before.busy);
  steerd_client_destroy(c);
  /* The stats line at exit counts them (the log goes with steerd_proc_stop). */
  kill(p.pid, SIGTERM);
  int status = 0;
  ck_assert_int_eq(waitpid(p.pid, &status, 0), p.pid);
  p.pid = 0;
  char line[128];
  snprintf(line, sizeof line, "%u refused BUSY (--command-queue)", r.busy);
  ck_assert_msg(steerd_proc_log_contains(&p, line), "the exit's stats do not count the BUSYs: %s", line);
  steerd_proc_stop(&p, 1000);
}
END_TEST

/* A client whose inbox is full waits for its share; another client's PING is
 * answered within a couple of ticks, long before the flooder's queue has
 * drained: the clients are served in turn, not in the order the packets came. */
START_TEST(another_client_is_served_before_a_backlog_drains) {
  steerd_proc p;
  start(&p, "100");
  replies r, o;
  steerd_client *c = connect_client(&p, "flooder", &r);
  steerd_client *obs = connect_client(&p, "pinger", &o);
  for (uint32_t i = 0; i < 100; i++) {
    proto_command cmd = spawn_at(-40.0f + (float)(i % 80));
    ck_assert_int_eq(steerd_client_send(c, &cmd, NULL), 0);
  }
  /* The flood is in once its first ACK is back. */
  service_until(c, NULL, &r, 1, 10000);
  ck_assert_uint_eq(r.acks, 1);
  proto_command ping;
  memset(&ping, 0, sizeof ping);
  ping.type = PROTO_MSG_PING;
  ck_assert_int_eq(steerd_client_send(obs, &ping, NULL), 0);
  o.acks = 0;
  uint64_t end = steerd_proc_now_ms() + 10000;
  while (o.acks == 0 && steerd_proc_now_ms() < end) {
    steerd_client_service(obs, 5);
    steerd_client_service(c, 0);
  }
  ck_assert_uint_eq(o.acks, 1);
  /* One command a tick: the flooder's 100 take over three seconds; the PING
   * came when most of them were still waiting. */
  ck_assert_msg(r.acks < 50, "the PING waited for %u of the flooder's commands", r.acks);
  service_until(c, obs, &r, 100, 30000);
  ck_assert_uint_eq(r.acks, 100);
  ck_assert_uint_eq(r.busy, 0);
  ck_assert(r.acks_in_order);
  steerd_client_destroy(obs);
  steerd_client_destroy(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("commands");
  TCase *tc = check_tcase(s, "inbox", 90);
  tcase_add_test(tc, a_flood_past_the_inbox_gets_busy_and_loses_nothing);
  tcase_add_test(tc, another_client_is_served_before_a_backlog_drains);
  return s;
}

int main(void) { return check_run(suite()); }
