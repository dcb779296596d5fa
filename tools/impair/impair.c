/* impair.c: the impairment proxy, see impair.h.
 *
 * Storage, all sized at create: the client table (an array of entries and a
 * parallel array of address keys scanned per datagram), a pool of
 * 2 * max_queued slots of max_datagram bytes for delayed datagrams, a min-heap
 * of slot indices ordered by (due time, arrival sequence) so equal delays keep
 * their order, and one receive buffer shared by every socket (libuv runs one
 * callback at a time and each consumes the buffer before returning). */
#include "impair.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECV_BYTES       65536u /* larger than any UDP payload */
#define MAX_DELAY_MS     60000u
#define DRAWS_PER_PACKET 7 /* loss, duplicate, reorder, 2 x jitter, 2 x jitter of the copy */
#define HOST_BYTES       16u

typedef enum client_state { CLIENT_FREE = 0, CLIENT_OPEN, CLIENT_CLOSING } client_state;

/* One client address and its upstream socket (connected to the server). */
typedef struct impair_client {
  uv_udp_t sock;           /* first: the callbacks cast &sock back; sock.data is the proxy */
  struct sockaddr_in addr; /* the client's address */
  uint64_t last_active_ms; /* traffic either way */
  uint32_t generation;     /* bumped when the entry is forgotten; queued datagrams carry it */
  client_state state;
} impair_client;

/* A delayed datagram. */
typedef struct impair_slot {
  uint64_t due_us;
  uint64_t seq; /* arrival order, breaks ties */
  uint32_t len;
  uint32_t client;     /* entry index (up) */
  uint32_t generation; /* of that entry (up) */
  steerd_impair_dir dir;
  struct sockaddr_in to; /* the client (down) */
} impair_slot;

struct steerd_impair {
  uv_loop_t *loop;
  steerd_impair_config cfg;
  char listen_host[HOST_BYTES];
  char upstream_host[HOST_BYTES];
  struct sockaddr_in upstream_addr;
  struct sockaddr_in bind_any; /* listen_host, port 0: where upstream sockets bind */
  uint16_t port;

  uv_udp_t listen;
  uv_timer_t timer; /* the heap's earliest datagram */
  uv_timer_t sweep; /* idle clients */
  uv_async_t async; /* request_stop */
  uint32_t open_handles;
  int closing;
  atomic_int stop_requested;

  uint64_t start_ns;
  uint64_t rng[STEERD_IMPAIR_DIR_COUNT][4];
  uint64_t busy_until_us[STEERD_IMPAIR_DIR_COUNT]; /* bandwidth: when the link is free again */

  impair_client *clients;
  uint64_t *keys; /* per entry: address and port, 0 when not open */

  impair_slot *slots;
  uint8_t *slot_data; /* max_datagram bytes per slot */
  uint32_t *free_slots;
  uint32_t free_count;
  uint32_t *heap;
  uint32_t heap_count;
  uint64_t seq;

  steerd_impair_stats stats;
  uint8_t *recv_buf; /* RECV_BYTES */
};

const char *steerd_impair_strerror(int code) {
  switch (code) {
  case STEERD_IMPAIR_OK:
    return "success";
  case STEERD_IMPAIR_EINVAL:
    return "invalid argument or configuration";
  case STEERD_IMPAIR_ENOMEM:
    return "out of memory";
  case STEERD_IMPAIR_ENOTLOOPBACK:
    return "not a numeric IPv4 loopback address (127.0.0.0/8)";
  case STEERD_IMPAIR_EBIND:
    return "could not bind the listen address";
  case STEERD_IMPAIR_EUV:
    return "a libuv call failed";
  default:
    return "unknown error";
  }
}

steerd_impair_config steerd_impair_default_config(void) {
  steerd_impair_config c;
  memset(&c, 0, sizeof c);
  c.listen_host = "127.0.0.1";
  c.upstream_host = "127.0.0.1";
  for (int d = 0; d < STEERD_IMPAIR_DIR_COUNT; d++) {
    c.link[d].jitter_dist = STEERD_IMPAIR_JITTER_UNIFORM;
    c.link[d].reorder_ms = 20;
  }
  c.seed = 1;
  c.max_clients = 256;
  c.idle_timeout_ms = 30000;
  c.max_queued = 4096;
  c.max_datagram = 2048;
  return c;
}

static int addr_is_loopback(const struct sockaddr_in *a) {
  return a->sin_family == AF_INET && (ntohl(a->sin_addr.s_addr) >> 24) == 127u;
}

int steerd_impair_is_loopback(const char *host) {
  struct sockaddr_in a;
  if (!host || strlen(host) >= HOST_BYTES || uv_ip4_addr(host, 0, &a) != 0)
    return 0;
  return addr_is_loopback(&a);
}

/* ---- random numbers: xoshiro256**, seeded with splitmix64 ------------------- */

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(uint64_t *s) {
  uint64_t result = rotl(s[1] * 5u, 7) * 9u;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

/* Uniform in [0, 1). */
static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }

/* Signed jitter in microseconds from two uniforms. */
static int64_t jitter_us(const steerd_impair_link *l, double ua, double ub) {
  double j = (double)l->jitter_ms * 1000.0;
  if (j <= 0.0)
    return 0;
  if (l->jitter_dist == STEERD_IMPAIR_JITTER_NORMAL) {
    double z = sqrt(-2.0 * log(1.0 - ua)) * cos(6.283185307179586 * ub);
    z = z > 4.0 ? 4.0 : (z < -4.0 ? -4.0 : z);
    return (int64_t)(z * j);
  }
  return (int64_t)((2.0 * ua - 1.0) * j);
}

/* ---- clock -------------------------------------------------------------------- */

static uint64_t now_us(const steerd_impair *p) { return (uv_hrtime() - p->start_ns) / 1000u; }

/* ---- the heap of delayed datagrams ---------------------------------------------- */

static int slot_before(const steerd_impair *p, uint32_t a, uint32_t b) {
  const impair_slot *x = &p->slots[a], *y = &p->slots[b];
  return x->due_us < y->due_us || (x->due_us == y->due_us && x->seq < y->seq);
}

static void heap_push(steerd_impair *p, uint32_t slot) {
  uint32_t i = p->heap_count++;
  while (i > 0) {
    uint32_t parent = (i - 1) / 2;
    if (!slot_before(p, slot, p->heap[parent]))
      break;
    p->heap[i] = p->heap[parent];
    i = parent;
  }
  p->heap[i] = slot;
}

static uint32_t heap_pop(steerd_impair *p) {
  uint32_t top = p->heap[0];
  uint32_t last = p->heap[--p->heap_count];
  uint32_t i = 0, n = p->heap_count;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && slot_before(p, p->heap[c + 1], p->heap[c]))
      c++;
    if (!slot_before(p, p->heap[c], last))
      break;
    p->heap[i] = p->heap[c];
    i = c;
  }
  if (n > 0)
    p->heap[i] = last;
  return top;
}

/* ---- sending ---------------------------------------------------------------------- */

static void send_now(steerd_impair *p, steerd_impair_dir dir, uint32_t ci, uint32_t generation,
                     const struct sockaddr_in *to, const uint8_t *data, uint32_t len) {
  steerd_impair_dir_stats *st = &p->stats.dir[dir];
  uv_buf_t b = uv_buf_init((char *)data, len);
  int r;
  if (dir == STEERD_IMPAIR_UP) {
    impair_client *c = &p->clients[ci];
    if (c->state != CLIENT_OPEN || c->generation != generation) {
      st->send_errors++;
      return;
    }
    r = uv_udp_try_send(&c->sock, &b, 1, NULL);
  } else {
    r = uv_udp_try_send(&p->listen, &b, 1, (const struct sockaddr *)to);
  }
  if (r < 0) {
    st->send_errors++;
    return;
  }
  st->forwarded++;
  st->bytes_forwarded += len;
}

static void on_timer(uv_timer_t *t);

/* Points the timer at the earliest datagram (or stops it). */
static void arm_timer(steerd_impair *p) {
  if (p->heap_count == 0) {
    uv_timer_stop(&p->timer);
    return;
  }
  uint64_t due = p->slots[p->heap[0]].due_us, now = now_us(p);
  uint64_t wait_ms = due > now ? (due - now + 999u) / 1000u : 0;
  uv_update_time(p->loop);
  uv_timer_start(&p->timer, on_timer, wait_ms, 0);
}

static void on_timer(uv_timer_t *t) {
  steerd_impair *p = t->data;
  uint64_t now = now_us(p);
  while (p->heap_count > 0 && p->slots[p->heap[0]].due_us <= now) {
    uint32_t s = heap_pop(p);
    impair_slot *sl = &p->slots[s];
    send_now(p, sl->dir, sl->client, sl->generation, &sl->to, p->slot_data + (size_t)s * p->cfg.max_datagram,
             sl->len);
    p->stats.queued[sl->dir]--;
    p->free_slots[p->free_count++] = s;
  }
  arm_timer(p);
}

/* Sends at due_us: at once if that is now, else through the heap. */
static int emit(steerd_impair *p, steerd_impair_dir dir, uint32_t ci, const struct sockaddr_in *to,
                const uint8_t *data, uint32_t len, uint64_t due_us, uint64_t now) {
  steerd_impair_dir_stats *st = &p->stats.dir[dir];
  uint32_t generation = p->clients[ci].generation;
  if (due_us <= now) {
    send_now(p, dir, ci, generation, to, data, len);
    return 0;
  }
  if (p->stats.queued[dir] >= p->cfg.max_queued || len > p->cfg.max_datagram || p->free_count == 0) {
    st->overflow++;
    return -1;
  }
  uint32_t s = p->free_slots[--p->free_count];
  impair_slot *sl = &p->slots[s];
  sl->due_us = due_us;
  sl->seq = p->seq++;
  sl->len = len;
  sl->client = ci;
  sl->generation = generation;
  sl->dir = dir;
  sl->to = *to;
  memcpy(p->slot_data + (size_t)s * p->cfg.max_datagram, data, len);
  heap_push(p, s);
  p->stats.queued[dir]++;
  st->delayed++;
  if (p->heap[0] == s)
    arm_timer(p);
  return 0;
}

/* One datagram in: loss, bandwidth, delay, reordering, duplication. */
static void relay(steerd_impair *p, steerd_impair_dir dir, uint32_t ci, const struct sockaddr_in *to,
                  const uint8_t *data, uint32_t len) {
  const steerd_impair_link *l = &p->cfg.link[dir];
  steerd_impair_dir_stats *st = &p->stats.dir[dir];
  double u[DRAWS_PER_PACKET];
  for (int i = 0; i < DRAWS_PER_PACKET; i++)
    u[i] = rng_unit(p->rng[dir]);
  st->received++;
  st->bytes_received += len;
  if (u[0] < l->loss) {
    st->dropped++;
    return;
  }
  uint64_t now = now_us(p), base = now, busy = p->busy_until_us[dir];
  if (l->bytes_per_second > 0) {
    uint64_t start = busy > now ? busy : now;
    busy = start + ((uint64_t)len * 1000000u + l->bytes_per_second - 1) / l->bytes_per_second;
    base = busy;
  }
  int64_t latency = (int64_t)l->latency_ms * 1000;
  int64_t d1 = latency + jitter_us(l, u[3], u[4]);
  int reorder = u[2] < l->reorder && l->reorder_ms > 0;
  if (reorder)
    d1 += (int64_t)l->reorder_ms * 1000;
  if (emit(p, dir, ci, to, data, len, base + (uint64_t)(d1 > 0 ? d1 : 0), now) != 0)
    return;
  p->busy_until_us[dir] = busy;
  if (reorder)
    st->reordered++;
  if (u[1] < l->duplicate) {
    int64_t d2 = latency + jitter_us(l, u[5], u[6]);
    if (emit(p, dir, ci, to, data, len, base + (uint64_t)(d2 > 0 ? d2 : 0), now) == 0)
      st->duplicated++;
  }
}

/* ---- clients ------------------------------------------------------------------------ */

static uint64_t addr_key(const struct sockaddr_in *a) {
  return ((uint64_t)a->sin_addr.s_addr << 16) | a->sin_port;
}

static uint64_t now_ms(const steerd_impair *p) { return now_us(p) / 1000u; }

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_upstream_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *addr,
                             unsigned flags);

static void on_client_closed(uv_handle_t *h) {
  impair_client *c = (impair_client *)h;
  steerd_impair *p = h->data;
  c->state = CLIENT_FREE;
  p->open_handles--;
}

static void client_forget(steerd_impair *p, uint32_t i) {
  impair_client *c = &p->clients[i];
  c->state = CLIENT_CLOSING;
  c->generation++;
  p->keys[i] = 0;
  p->stats.clients_active--;
  uv_close((uv_handle_t *)&c->sock, on_client_closed);
}

/* The entry of a client address, opened if new; -1 when the table is full or
 * the upstream socket could not be opened. */
static int64_t client_lookup(steerd_impair *p, const struct sockaddr_in *from) {
  uint64_t key = addr_key(from);
  uint32_t n = p->cfg.max_clients, free_i = UINT32_MAX;
  for (uint32_t i = 0; i < n; i++) {
    if (p->keys[i] == key)
      return i;
    if (free_i == UINT32_MAX && p->clients[i].state == CLIENT_FREE)
      free_i = i;
  }
  if (free_i == UINT32_MAX) {
    p->stats.table_full++;
    return -1;
  }
  impair_client *c = &p->clients[free_i];
  if (uv_udp_init(p->loop, &c->sock) != 0) {
    p->stats.dir[STEERD_IMPAIR_UP].send_errors++;
    return -1;
  }
  c->sock.data = p;
  p->open_handles++;
  c->state = CLIENT_OPEN;
  c->addr = *from;
  c->last_active_ms = now_ms(p);
  p->keys[free_i] = key;
  p->stats.clients_active++;
  if (uv_udp_bind(&c->sock, (const struct sockaddr *)&p->bind_any, 0) != 0 ||
      uv_udp_connect(&c->sock, (const struct sockaddr *)&p->upstream_addr) != 0 ||
      uv_udp_recv_start(&c->sock, on_alloc, on_upstream_recv) != 0) {
    client_forget(p, free_i);
    p->stats.dir[STEERD_IMPAIR_UP].send_errors++;
    return -1;
  }
  p->stats.clients_created++;
  return free_i;
}

static void on_sweep(uv_timer_t *t) {
  steerd_impair *p = t->data;
  uint64_t now = now_ms(p);
  for (uint32_t i = 0; i < p->cfg.max_clients; i++) {
    impair_client *c = &p->clients[i];
    if (c->state == CLIENT_OPEN && now - c->last_active_ms >= p->cfg.idle_timeout_ms) {
      client_forget(p, i);
      p->stats.clients_expired++;
    }
  }
}

/* ---- receiving ----------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  steerd_impair *p = h->data;
  *buf = uv_buf_init((char *)p->recv_buf, RECV_BYTES);
}

static void on_listen_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *addr,
                           unsigned flags) {
  steerd_impair *p = h->data;
  if (nread < 0 || addr == NULL || p->closing)
    return; /* nread 0 with no address: nothing more to read */
  if (flags & UV_UDP_PARTIAL) {
    p->stats.truncated++;
    return;
  }
  const struct sockaddr_in *from = (const struct sockaddr_in *)addr;
  if (!addr_is_loopback(from)) {
    p->stats.refused++;
    return;
  }
  int64_t ci = client_lookup(p, from);
  if (ci < 0)
    return;
  p->clients[ci].last_active_ms = now_ms(p);
  relay(p, STEERD_IMPAIR_UP, (uint32_t)ci, from, (const uint8_t *)buf->base, (uint32_t)nread);
}

static void on_upstream_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *addr,
                             unsigned flags) {
  impair_client *c = (impair_client *)h;
  steerd_impair *p = h->data;
  if (nread < 0 || addr == NULL || p->closing || c->state != CLIENT_OPEN)
    return;
  if (flags & UV_UDP_PARTIAL) {
    p->stats.truncated++;
    return;
  }
  c->last_active_ms = now_ms(p);
  relay(p, STEERD_IMPAIR_DOWN, (uint32_t)(c - p->clients), &c->addr, (const uint8_t *)buf->base,
        (uint32_t)nread);
}

/* ---- life cycle -------------------------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h) {
  steerd_impair *p = h->data;
  p->open_handles--;
}

static void on_async(uv_async_t *a) { steerd_impair_close(a->data); }

static int link_valid(const steerd_impair_link *l) {
  return l->loss >= 0.0 && l->loss <= 1.0 && l->duplicate >= 0.0 && l->duplicate <= 1.0 &&
         l->reorder >= 0.0 && l->reorder <= 1.0 && l->latency_ms <= MAX_DELAY_MS &&
         l->jitter_ms <= MAX_DELAY_MS && l->reorder_ms <= MAX_DELAY_MS &&
         (unsigned)l->jitter_dist < STEERD_IMPAIR_JITTER_COUNT;
}

static int config_check(const steerd_impair_config *c) {
  if (!c->listen_host || !c->upstream_host || c->upstream_port == 0)
    return STEERD_IMPAIR_EINVAL;
  if (!steerd_impair_is_loopback(c->listen_host) || !steerd_impair_is_loopback(c->upstream_host))
    return STEERD_IMPAIR_ENOTLOOPBACK;
  if (c->max_clients < 1 || c->max_clients > 65536 || c->max_queued < 1 || c->max_queued > (1u << 20) ||
      c->max_datagram < 64 || c->max_datagram > 65507 || c->idle_timeout_ms < 1)
    return STEERD_IMPAIR_EINVAL;
  for (int d = 0; d < STEERD_IMPAIR_DIR_COUNT; d++)
    if (!link_valid(&c->link[d]))
      return STEERD_IMPAIR_EINVAL;
  /* Relaying to ourselves would loop forever. */
  if (c->listen_port == c->upstream_port && strcmp(c->listen_host, c->upstream_host) == 0)
    return STEERD_IMPAIR_EINVAL;
  return STEERD_IMPAIR_OK;
}

int steerd_impair_create(uv_loop_t *loop, const steerd_impair_config *cfg, steerd_impair **out) {
  if (!out)
    return STEERD_IMPAIR_EINVAL;
  *out = NULL;
  if (!loop || !cfg)
    return STEERD_IMPAIR_EINVAL;
  int err = config_check(cfg);
  if (err != 0)
    return err;

  steerd_impair *p = calloc(1, sizeof *p);
  if (!p)
    return STEERD_IMPAIR_ENOMEM;
  p->loop = loop;
  p->cfg = *cfg;
  snprintf(p->listen_host, sizeof p->listen_host, "%s", cfg->listen_host); /* length checked above */
  snprintf(p->upstream_host, sizeof p->upstream_host, "%s", cfg->upstream_host);
  p->cfg.listen_host = p->listen_host;
  p->cfg.upstream_host = p->upstream_host;
  atomic_init(&p->stop_requested, 0);
  p->start_ns = uv_hrtime();
  for (int d = 0; d < STEERD_IMPAIR_DIR_COUNT; d++) {
    uint64_t x = cfg->seed ^ (0xa0761d6478bd642full * (uint64_t)(d + 1));
    for (int i = 0; i < 4; i++)
      p->rng[d][i] = splitmix64(&x);
  }

  uint32_t nslots = 2u * cfg->max_queued;
  p->clients = calloc(cfg->max_clients, sizeof *p->clients);
  p->keys = calloc(cfg->max_clients, sizeof *p->keys);
  p->slots = calloc(nslots, sizeof *p->slots);
  p->slot_data = malloc((size_t)nslots * cfg->max_datagram);
  p->free_slots = malloc(nslots * sizeof *p->free_slots);
  p->heap = malloc(nslots * sizeof *p->heap);
  p->recv_buf = malloc(RECV_BYTES);
  if (!p->clients || !p->keys || !p->slots || !p->slot_data || !p->free_slots || !p->heap || !p->recv_buf) {
    steerd_impair_destroy(p);
    return STEERD_IMPAIR_ENOMEM;
  }
  for (uint32_t i = 0; i < nslots; i++)
    p->free_slots[i] = nslots - 1 - i;
  p->free_count = nslots;

  struct sockaddr_in listen_addr;
  uv_ip4_addr(p->listen_host, cfg->listen_port, &listen_addr);
  uv_ip4_addr(p->listen_host, 0, &p->bind_any);
  uv_ip4_addr(p->upstream_host, cfg->upstream_port, &p->upstream_addr);

  /* Each handle counts as open from its init, so destroy can close it. */
  if (uv_udp_init(loop, &p->listen) != 0) {
    steerd_impair_destroy(p);
    return STEERD_IMPAIR_EUV;
  }
  p->listen.data = p;
  p->open_handles++;
  uv_timer_init(loop, &p->timer);
  p->timer.data = p;
  p->open_handles++;
  uv_timer_init(loop, &p->sweep);
  p->sweep.data = p;
  p->open_handles++;
  if (uv_async_init(loop, &p->async, on_async) != 0) {
    steerd_impair_destroy(p);
    return STEERD_IMPAIR_EUV;
  }
  p->async.data = p;
  p->open_handles++;

  if (uv_udp_bind(&p->listen, (const struct sockaddr *)&listen_addr, 0) != 0) {
    steerd_impair_destroy(p);
    return STEERD_IMPAIR_EBIND;
  }
  struct sockaddr_in bound;
  int namelen = sizeof bound;
  if (uv_udp_getsockname(&p->listen, (struct sockaddr *)&bound, &namelen) != 0 ||
      uv_udp_recv_start(&p->listen, on_alloc, on_listen_recv) != 0) {
    steerd_impair_destroy(p);
    return STEERD_IMPAIR_EUV;
  }
  p->port = ntohs(bound.sin_port);
  uint64_t every = cfg->idle_timeout_ms / 4u;
  every = every < 50 ? 50 : (every > 1000 ? 1000 : every);
  uv_timer_start(&p->sweep, on_sweep, every, every);
  *out = p;
  return STEERD_IMPAIR_OK;
}

uint16_t steerd_impair_port(const steerd_impair *p) { return p ? p->port : 0; }

static void close_handle(steerd_impair *p, uv_handle_t *h) {
  (void)p;
  if (!uv_is_closing(h))
    uv_close(h, on_handle_closed);
}

void steerd_impair_close(steerd_impair *p) {
  if (!p || p->closing)
    return;
  p->closing = 1;
  if (p->listen.loop)
    close_handle(p, (uv_handle_t *)&p->listen);
  if (p->timer.loop)
    close_handle(p, (uv_handle_t *)&p->timer);
  if (p->sweep.loop)
    close_handle(p, (uv_handle_t *)&p->sweep);
  if (p->async.loop)
    close_handle(p, (uv_handle_t *)&p->async);
  for (uint32_t i = 0; p->clients && i < p->cfg.max_clients; i++)
    if (p->clients[i].state == CLIENT_OPEN)
      client_forget(p, i);
  /* Queued datagrams are dropped: the slots go back to the pool. */
  uint32_t nslots = 2u * p->cfg.max_queued;
  for (uint32_t i = 0; p->free_slots && i < nslots; i++)
    p->free_slots[i] = nslots - 1 - i;
  p->free_count = p->free_slots ? nslots : 0;
  p->heap_count = 0;
  for (int d = 0; d < STEERD_IMPAIR_DIR_COUNT; d++)
    p->stats.queued[d] = 0;
}

void steerd_impair_request_stop(steerd_impair *p) {
  if (!p)
    return;
  int expected = 0;
  if (atomic_compare_exchange_strong(&p->stop_requested, &expected, 1))
    uv_async_send(&p->async);
}

int steerd_impair_closed(const steerd_impair *p) { return p && p->closing && p->open_handles == 0; }

void steerd_impair_destroy(steerd_impair *p) {
  if (!p)
    return;
  if (p->open_handles > 0) {
    steerd_impair_close(p);
    while (p->open_handles > 0)
      uv_run(p->loop, UV_RUN_NOWAIT);
  }
  free(p->clients);
  free(p->keys);
  free(p->slots);
  free(p->slot_data);
  free(p->free_slots);
  free(p->heap);
  free(p->recv_buf);
  free(p);
}

void steerd_impair_get_stats(const steerd_impair *p, steerd_impair_stats *out) {
  if (p && out)
    *out = p->stats;
}
