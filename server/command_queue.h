/* command_queue.h: the commands each client has sent and the server has not
 * run yet, and the per-tick budget they run in.
 *
 * A command packet goes into its client's FIFO as it arrives; the loop runs
 * what is queued between ticks, in rounds over the clients that have commands
 * waiting (deficit round robin: each visit grants a client a quantum of CPU
 * time, and each command run is charged what it took), until the tick's
 * budget is spent. A client that sends expensive commands (SPAWN batches, map
 * edits, GOTO) gets its share of the budget and waits for the rest, and other
 * clients' commands are not stuck behind its own; the tick and the snapshots
 * never wait for a backlog. A FIFO at its limit of commands or bytes takes no
 * more: the server answers those with BUSY (PROTOCOL.md 4, Command queue).
 *
 * Loop thread only. The queue owns the packets in it (enet_packet_destroy
 * when they have run or are dropped). */
#ifndef STEERD_COMMAND_QUEUE_H
#define STEERD_COMMAND_QUEUE_H

#include <enet/enet.h>
#include <stddef.h>
#include <stdint.h>

typedef struct steerd_cmdq_entry steerd_cmdq_entry;

/* One client's FIFO; all zero is empty. Plain data: it moves with the
 * client's record when that is copied. */
typedef struct steerd_cmdq {
  steerd_cmdq_entry *head, *tail;
  uint32_t count;
  size_t bytes;       /* of the packets queued */
  int64_t deficit_ns; /* deficit round robin: what it may still spend in this round */
  uint64_t cost_ns;   /* a running mean of what its commands take (a BUSY's estimate) */
} steerd_cmdq;

/* Queues p (received on channel at time now_ns) unless q holds max_count
 * commands or max_bytes bytes: 0, or -1 (the caller keeps p). */
int steerd_cmdq_push(steerd_cmdq *q, ENetPacket *p, uint8_t channel, uint64_t now_ns, uint32_t max_count,
                     size_t max_bytes);

/* Drops everything queued (the client is gone). */
void steerd_cmdq_clear(steerd_cmdq *q);

/* Runs one command: p and channel as received. It may clear or move any
 * queue (a client dropped, or moved to another slot), the one it came from
 * included; p stays the queue's. */
typedef void (*steerd_cmdq_run_fn)(void *ctx, uint32_t slot, const ENetPacket *p, uint8_t channel);

/* The queue of slot i of n, or NULL (no client there). */
typedef steerd_cmdq *(*steerd_cmdq_at_fn)(void *ctx, uint32_t slot);

/* The scheduler over every slot's queue; all zero is a fresh one. */
typedef struct steerd_cmdsched {
  uint32_t cursor;      /* the slot the next round starts at */
  uint64_t run;         /* commands run */
  uint64_t wait_ns_sum; /* their time in the queue */
  uint64_t wait_ns_max;
} steerd_cmdsched;

/* Runs queued commands, in rounds from the cursor, until budget_ns is spent
 * or none is left; each visit grants a slot quantum_ns. Returns the time
 * spent; *left (may be NULL) gets 1 when commands are still waiting. */
uint64_t steerd_cmdq_run(steerd_cmdsched *sched, uint32_t slots, steerd_cmdq_at_fn at, steerd_cmdq_run_fn run,
                         void *ctx, uint64_t budget_ns, uint64_t quantum_ns, int *left);

#endif /* STEERD_COMMAND_QUEUE_H */
