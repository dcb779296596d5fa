/* server_snapshots.c: a snapshot round: full snapshots and DELTA frames to the clients due,
 * within the server-wide send budget, least recently served first. */
#include "server_internal.h"
#include "wire_core.h"

/* The DELTA frames of the delta clients this round serves (send_take),
 * as unreliable packets on channel 1. */
static void send_deltas(steerd_server *s, uint64_t tick, uint64_t time_us) {
  uint64_t t0 = uv_hrtime(), cpu0 = thread_cpu_ns();
  /* Encoded on the pool's threads by ranges of clients; sent from here, in
   * client order (ENet is the loop thread's). */
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->cfg.max_clients; i++)
    if (s->clients[i].send_take)
      s->delta_slots[n++] = i;
  if (n == 0)
    return;
  steerd_netcode_begin(s->netcode, s->world);
  if (steerd_netcode_encode_batch(s->netcode, s->world, s->delta_slots, n, tick, time_us) !=
      STEERD_NETCODE_OK)
    n = 0;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = s->delta_slots[k];
    client *c = &s->clients[i];
    c->send_take = 0;
    steerd_netcode_out out;
    if (steerd_netcode_batch_result(s->netcode, i, s->world, time_us, &out) != STEERD_NETCODE_OK)
      continue;
    uint32_t bytes = 0;
    for (uint32_t p = 0; p < out.part_count; p++) {
      send_bytes(c->peer, PROTO_CHANNEL_SNAPSHOT, out.part[p], out.part_len[p], 0);
      s->stats.snapshot_packets++;
      s->stats.snapshot_bytes += out.part_len[p];
      s->stats.delta_bytes += out.part_len[p];
      s->stats.delta_packets++;
      bytes += (uint32_t)out.part_len[p];
    }
    c->delta_bytes_est = bytes;
    s->stats.delta_frames++;
  }
  for (uint32_t i = 0; i < s->cfg.max_clients; i++)
    s->clients[i].send_take = 0;
  s->stats.delta_ns_total += uv_hrtime() - t0;
  if (n) /* the loop thread's own share of the batch: it runs one of the pool's ranges */
    s->delta_ns_per_frame = (3u * s->delta_ns_per_frame + (thread_cpu_ns() - cpu0) / n) / 4u;
}

/* The full-snapshot clients this snapshot goes to: each has a byte
 * bucket of --full-rate-kbps (credit capped at one snapshot interval's share),
 * and a client in debt skips snapshots until it has paid for the last one.
 * A snapshot always goes whole, so a client of a big world gets complete
 * snapshots, less often (PROTOCOL.md 7.5 allows any tick to lack one), and its
 * bytes and the loop thread's work for it (ENet sends, and the encoding when
 * no other full client is due) are bounded by the rate, not by the world.
 * Returns how many are due. */
static uint32_t full_clients_due(steerd_server *s, uint64_t time_us) {
  uint64_t rate = (uint64_t)s->cfg.full_rate_kbps * 1000u / 8u;
  uint64_t cap = rate / (s->cfg.snapshot_rate ? s->cfg.snapshot_rate : 1u);
  uint32_t due = 0;
  for (uint32_t i = 0; i < s->cfg.max_clients; i++) {
    client *c = &s->clients[i];
    c->full_due = c->peer && c->welcomed && !c->delta && !c->closing;
    if (c->full_due && rate && !steerd_bytebucket_ready(&c->full_rate, time_us, rate, cap)) {
      c->full_due = 0;
      s->stats.full_deferred++;
    }
    due += (uint32_t)c->full_due;
  }
  return due;
}

/* Every agent, in as many packets as it takes (s->full_parts, shared by the
 * clients they go to); each packet is filled to the part budget by the
 * agents' actual sizes, stays under the MTU and names its part, so a lost
 * part loses only its own agents. Returns the parts; *total their bytes. */
static uint32_t encode_full(steerd_server *s, uint64_t tick, uint64_t *total) {
  steer_world_view wv = steer_world_get_view(s->world);
  proto_pose_view view = wire_pose_view(&wv);
  uint32_t parts = 0;
  for (uint32_t first = 0; first < view.count || parts == 0;) {
    uint32_t n = proto_snapshot_fit(&view, NULL, first, view.count - first, PROTO_SNAPSHOT_PART_BYTES);
    s->part_first[parts++] = first;
    first += n ? n : 1;
  }
  s->part_first[parts] = view.count;
  proto_snapshot_header h;
  h.tick = tick;
  h.server_time_us = s->tick_time_us; /* the simulation time of the tick, not the send time (§7.5) */
  h.part_count = parts;
  h.agent_total = view.count;
  uint32_t made = 0;
  *total = 0;
  for (uint32_t part = 0; part < parts; part++) {
    uint32_t first = s->part_first[part];
    h.part_index = part;
    size_t len = proto_encode_snapshot_view(s->out, PROTO_SNAPSHOT_PART_BYTES, &h, &view, NULL, first,
                                            s->part_first[part + 1] - first);
    if (len == 0) {
      LOG_ERROR("snapshot part %u of tick %llu does not fit %d bytes", part, (unsigned long long)h.tick,
                PROTO_SNAPSHOT_PART_BYTES);
      continue;
    }
    ENetPacket *p = enet_packet_create(s->out, len, 0);
    if (!p)
      continue;
    s->full_parts[made++] = p;
    *total += len;
  }
  return made;
}

static int cmp_cost(const void *a, const void *b) {
  const send_cand *x = a, *y = b;
  if (x->cost != y->cost)
    return x->cost < y->cost ? -1 : 1;
  return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static int cmp_served(const void *a, const void *b) {
  const send_cand *x = a, *y = b;
  if (x->served != y->served)
    return x->served < y->served ? -1 : 1;
  return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Which clients this round serves, within the server-wide budget
 * (--send-budget-kbps over the round's interval, --send-budget-us of the
 * loop thread's CPU time: CPU, not wall time, so that a busy machine
 * descheduling the loop does not cut the rounds). Each due client's cost is
 * the larger of its bytes and its reckoned CPU time, as shares of the round's budget (a full snapshot's own
 * encoding, spent already, comes off the budget first). Max-min fair: clients costing no more than an even
 * split of what is left are all served (cheapest first, each leaving the rest more to split); the others are
 * served least recently served first while the budget lasts, and the first of them always, so every client is
 * served in turn however small the budget. A client not served keeps its place and goes before those served
 * since. Clears full_due and sets send_take accordingly. */
static void choose_round(steerd_server *s, uint32_t parts, uint64_t full_bytes, uint64_t encode_ns) {
  double bytes_budget = (double)s->cfg.send_budget_kbps * 125.0 / (double)s->cfg.snapshot_rate;
  double ns_budget = (double)s->cfg.send_budget_us * 1000.0;
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->cfg.max_clients; i++) {
    client *c = &s->clients[i];
    c->send_take = 0;
    int delta = c->peer && c->welcomed && c->delta && !c->closing;
    if (!c->full_due && !delta)
      continue;
    double bytes = c->full_due ? (double)full_bytes
                               : (double)(c->delta_bytes_est ? c->delta_bytes_est : s->cfg.snapshot_budget);
    double ns = c->full_due ? (double)parts * (double)s->full_ns_per_part : (double)s->delta_ns_per_frame;
    double cost = 0.0;
    if (bytes_budget > 0.0)
      cost = bytes / bytes_budget;
    if (ns_budget > 0.0 && ns / ns_budget > cost)
      cost = ns / ns_budget;
    s->send_cands[n++] = (send_cand){cost, c->served_round, i};
  }
  double left = 1.0 - (ns_budget > 0.0 ? (double)encode_ns / ns_budget : 0.0);
  uint32_t k = 0;
  if (bytes_budget <= 0.0 && ns_budget <= 0.0) {
    k = n;
  } else {
    qsort(s->send_cands, n, sizeof(*s->send_cands), cmp_cost);
    for (; k < n && s->send_cands[k].cost <= left / (double)(n - k); k++)
      left -= s->send_cands[k].cost;
    qsort(s->send_cands + k, n - k, sizeof(*s->send_cands), cmp_served);
    for (uint32_t first = k; k < n && (k == first || s->send_cands[k].cost <= left); k++)
      left -= s->send_cands[k].cost;
  }
  if (k < n)
    s->stats.send_rounds_limited++;
  for (uint32_t j = 0; j < n; j++) {
    client *c = &s->clients[s->send_cands[j].slot];
    if (j < k) {
      c->served_round = s->send_round;
      c->send_take = !c->full_due;
    } else if (c->full_due) {
      c->full_due = 0;
      s->stats.full_budget_deferred++;
    } else {
      s->stats.delta_budget_deferred++;
    }
  }
}

/* One snapshot round: the full snapshot encoded once for the full clients
 * due, then the clients the budget allows (choose_round()) get theirs. */
void send_snapshot(steerd_server *s) {
  uint64_t tick = steer_world_tick(s->world);
  uint64_t t0 = thread_cpu_ns(), total = 0;
  s->send_round++;
  uint32_t parts = full_clients_due(s, s->tick_time_us) ? encode_full(s, tick, &total) : 0;
  uint64_t t1 = thread_cpu_ns();
  choose_round(s, parts, total, t1 - t0);
  uint32_t served = 0;
  for (uint32_t i = 0; i < s->cfg.max_clients; i++) {
    client *c = &s->clients[i];
    if (!c->full_due)
      continue;
    for (uint32_t p = 0; p < parts; p++)
      enet_peer_send(c->peer, PROTO_CHANNEL_SNAPSHOT, s->full_parts[p]);
    steerd_bytebucket_charge(&c->full_rate, total);
    s->stats.full_sent++;
    s->stats.snapshot_bytes += total;
    served++;
  }
  for (uint32_t p = 0; p < parts; p++)
    if (s->full_parts[p]->referenceCount == 0)
      enet_packet_destroy(s->full_parts[p]);
  if (served) {
    s->stats.snapshot_packets += parts;
    uint64_t per = (thread_cpu_ns() - t1) / ((uint64_t)served * (parts ? parts : 1u));
    s->full_ns_per_part = (3u * s->full_ns_per_part + per) / 4u;
  }
  send_deltas(s, tick, s->tick_time_us);
  s->stats.snapshots++;
  if (s->observer.on_snapshot)
    s->observer.on_snapshot(s->observer.arg);
}
