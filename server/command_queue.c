/* command_queue.c: see command_queue.h. */
#include "command_queue.h"

#include <stdlib.h>
#include <uv.h>

struct steerd_cmdq_entry {
  steerd_cmdq_entry *next;
  ENetPacket *packet;
  uint64_t arrived_ns;
  uint8_t channel;
};

int steerd_cmdq_push(steerd_cmdq *q, ENetPacket *p, uint8_t channel, uint64_t now_ns, uint32_t max_count,
                     size_t max_bytes) {
  if (q->count >= max_count || q->bytes + p->dataLength > max_bytes)
    return -1;
  steerd_cmdq_entry *e = malloc(sizeof *e);
  if (!e)
    return -1;
  *e = (steerd_cmdq_entry){NULL, p, now_ns, channel};
  if (q->tail)
    q->tail->next = e;
  else
    q->head = e;
  q->tail = e;
  q->count++;
  q->bytes += p->dataLength;
  return 0;
}

static steerd_cmdq_entry *pop(steerd_cmdq *q) {
  steerd_cmdq_entry *e = q->head;
  q->head = e->next;
  if (!q->head)
    q->tail = NULL;
  q->count--;
  q->bytes -= e->packet->dataLength;
  return e;
}

void steerd_cmdq_clear(steerd_cmdq *q) {
  while (q->count) {
    steerd_cmdq_entry *e = pop(q);
    enet_packet_destroy(e->packet);
    free(e);
  }
  q->deficit_ns = 0;
}

uint64_t steerd_cmdq_run(steerd_cmdsched *sched, uint32_t slots, steerd_cmdq_at_fn at, steerd_cmdq_run_fn run,
                         void *ctx, uint64_t budget_ns, uint64_t quantum_ns, int *left) {
  uint64_t spent = 0;
  int waiting = slots > 0;
  if (sched->cursor >= slots)
    sched->cursor = 0;
  while (waiting && spent < budget_ns) {
    waiting = 0;
    for (uint32_t k = 0; k < slots && spent < budget_ns; k++) {
      uint32_t i = (sched->cursor + k) % slots;
      steerd_cmdq *q = at(ctx, i);
      if (!q || !q->count)
        continue;
      q->deficit_ns += (int64_t)quantum_ns;
      while (q && q->count && q->deficit_ns > 0 && spent < budget_ns) {
        steerd_cmdq_entry *e = pop(q);
        uint64_t t0 = uv_hrtime();
        uint64_t waited = t0 - e->arrived_ns;
        sched->wait_ns_sum += waited;
        if (waited > sched->wait_ns_max)
          sched->wait_ns_max = waited;
        sched->run++;
        run(ctx, i, e->packet, e->channel);
        uint64_t took = uv_hrtime() - t0;
        spent += took;
        enet_packet_destroy(e->packet);
        free(e);
        q = at(ctx, i); /* the run may have dropped or moved the client */
        if (q) {
          q->deficit_ns -= (int64_t)took;
          q->cost_ns = q->cost_ns ? (7u * q->cost_ns + took) / 8u : took;
        }
      }
      if (q && !q->count)
        q->deficit_ns = 0; /* an idle client saves up no credit */
      else if (q)
        waiting = 1;
      if (spent >= budget_ns)
        sched->cursor = (i + 1u) % slots; /* the next client is first next time */
    }
  }
  if (left) {
    *left = 0;
    for (uint32_t i = 0; i < slots && !*left; i++) {
      const steerd_cmdq *q = at(ctx, i);
      *left = q && q->count;
    }
  }
  return spent;
}
