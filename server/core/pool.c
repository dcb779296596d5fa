/* pool.c: worker threads woken once per pass by a condition variable; within a
 * pass they take chunks from an atomic counter. The caller takes chunks too,
 * then waits for the workers still running one. Waiting sleeps instead of
 * spinning: the tick is short and the machine may be shared. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct steer_pool {
  uint32_t threads;
  uint32_t started; /* workers running */
  pthread_t *tid;
  pthread_mutex_t mu;
  pthread_cond_t go;   /* a new run (or quit) for the workers */
  pthread_cond_t done; /* the last worker left the run */
  uint64_t gen;        /* runs started; a worker runs each generation once */
  uint32_t busy;       /* workers not yet through the current run */
  int quit;
  /* The current run. */
  steer_pool_fn fn;
  void *ctx;
  uint32_t count, chunk;
  atomic_uint_fast64_t next; /* start of the next chunk to hand out */
  int measure;               /* steer_pool_measure */
  uint64_t caller_ns;        /* the caller's CPU time inside runs while measuring */
};

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pool_work(steer_pool *p) {
  const uint64_t count = p->count, chunk = p->chunk;
  for (;;) {
    uint64_t b = atomic_fetch_add_explicit(&p->next, chunk, memory_order_relaxed);
    if (b >= count)
      return;
    uint64_t e = b + chunk < count ? b + chunk : count;
    p->fn(p->ctx, (uint32_t)b, (uint32_t)e);
  }
}

static void *pool_main(void *arg) {
  steer_pool *p = arg;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (p->gen == seen && !p->quit)
      pthread_cond_wait(&p->go, &p->mu);
    if (p->quit)
      break;
    seen = p->gen;
    pthread_mutex_unlock(&p->mu);
    pool_work(p);
    pthread_mutex_lock(&p->mu);
    if (--p->busy == 0)
      pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

steer_pool *steer_pool_create(uint32_t threads) {
  if (threads == 0 || threads > STEER_POOL_MAX_THREADS)
    return NULL;
  steer_pool *p = calloc(1, sizeof(*p));
  if (!p)
    return NULL;
  p->threads = threads;
  atomic_init(&p->next, 0);
  if (threads == 1)
    return p;
  p->tid = calloc(threads - 1, sizeof(*p->tid));
  if (!p->tid || pthread_mutex_init(&p->mu, NULL) != 0) {
    free(p->tid);
    free(p);
    return NULL;
  }
  if (pthread_cond_init(&p->go, NULL) != 0 || pthread_cond_init(&p->done, NULL) != 0) {
    pthread_mutex_destroy(&p->mu);
    free(p->tid);
    free(p);
    return NULL;
  }
  for (; p->started < threads - 1; p->started++)
    if (pthread_create(&p->tid[p->started], NULL, pool_main, p) != 0) {
      steer_pool_destroy(p);
      return NULL;
    }
  return p;
}

void steer_pool_destroy(steer_pool *p) {
  if (!p)
    return;
  if (p->threads > 1) {
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (uint32_t i = 0; i < p->started; i++)
      pthread_join(p->tid[i], NULL);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
  }
  free(p->tid);
  free(p);
}

uint32_t steer_pool_threads(const steer_pool *p) { return p ? p->threads : 1u; }

static void pool_run(steer_pool *p, uint32_t count, uint32_t chunk, steer_pool_fn fn, void *ctx);

void steer_pool_run(steer_pool *p, uint32_t count, uint32_t chunk, steer_pool_fn fn, void *ctx) {
  if (p && p->measure) {
    uint64_t t0 = thread_cpu_ns();
    pool_run(p, count, chunk, fn, ctx);
    p->caller_ns += thread_cpu_ns() - t0;
  } else {
    pool_run(p, count, chunk, fn, ctx);
  }
}

void steer_pool_measure(steer_pool *p, int on) {
  if (!p)
    return;
  if (on && !p->measure)
    p->caller_ns = 0;
  p->measure = on != 0;
}

uint64_t steer_pool_caller_ns(const steer_pool *p) { return p ? p->caller_ns : 0u; }

static void pool_run(steer_pool *p, uint32_t count, uint32_t chunk, steer_pool_fn fn, void *ctx) {
  if (chunk == 0)
    chunk = 1;
  if (!p || p->threads == 1 || count <= chunk) {
    if (count > 0)
      fn(ctx, 0, count);
    return;
  }
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->ctx = ctx;
  p->count = count;
  p->chunk = chunk;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  p->busy = p->started;
  p->gen++;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  pool_work(p);
  /* The mutex orders every worker's writes before the caller reads them. */
  pthread_mutex_lock(&p->mu);
  while (p->busy > 0)
    pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

uint32_t steer_pool_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1)
    return 1;
  return n > (long)STEER_POOL_MAX_THREADS ? STEER_POOL_MAX_THREADS : (uint32_t)n;
}
