/* pool.h: a fixed pool of worker threads for the passes of a tick.
 *
 * steer_pool_run() splits the range [0, count) into chunks and runs them on the
 * workers and the calling thread, and returns when all are done. Chunks are
 * handed out by one atomic counter (no lock per chunk), so which thread runs a
 * chunk varies; a pass whose work for one index depends only on state no other
 * index writes gives the same results whatever the split. The threads are
 * started once, at creation; running a pass allocates nothing. */
#ifndef STEER_POOL_H
#define STEER_POOL_H

#include <stdint.h>

#define STEER_POOL_MAX_THREADS 256u

typedef struct steer_pool steer_pool;

/* Runs fn(ctx, begin, end) over a chunk [begin, end) of the range. */
typedef void (*steer_pool_fn)(void *ctx, uint32_t begin, uint32_t end);

/* A pool of `threads` threads in all: the caller of steer_pool_run and threads - 1
 * workers (1: no workers, every run is a plain call). Returns NULL when threads
 * is 0 or above STEER_POOL_MAX_THREADS, or when memory or threads run out. */
steer_pool *steer_pool_create(uint32_t threads);
/* Stops and joins the workers; accepts NULL. Not while a run is in progress. */
void steer_pool_destroy(steer_pool *p);

/* Threads in the pool (1 for NULL). */
uint32_t steer_pool_threads(const steer_pool *p);

/* Runs fn over [0, count) in chunks of `chunk` (0 is taken as 1) and returns
 * when every chunk has run. With one thread, or a range of at most one chunk,
 * it calls fn(ctx, 0, count) on the calling thread. One run at a time per pool. */
void steer_pool_run(steer_pool *p, uint32_t count, uint32_t chunk, steer_pool_fn fn, void *ctx);

/* Measurement (benchmarks): while on, the pool adds up the CPU time the
 * calling thread spends inside steer_pool_run (two clock reads per run), so
 * that what a tick runs outside the pool, its serial part, is the caller's
 * CPU time minus this. Off at creation; accepts NULL. */
void steer_pool_measure(steer_pool *p, int on);
/* The caller's CPU ns inside runs since measuring was turned on (0 for NULL). */
uint64_t steer_pool_caller_ns(const steer_pool *p);

/* The number of online processors (at least 1): the default thread count. */
uint32_t steer_pool_cores(void);

#endif /* STEER_POOL_H */
