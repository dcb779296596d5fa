/* ticker.h: a fixed-rate schedule driven by a high-resolution clock.
 *
 * Deadlines are start + k * 1e9 / rate computed in integers, so the schedule
 * never drifts however long it runs. After a stall the ticker runs at most
 * max_catchup ticks at once and skips the rest, counting an overrun. Pure: the
 * caller passes the time. */
#ifndef STEERD_TICKER_H
#define STEERD_TICKER_H

#include <stdint.h>

typedef struct steerd_ticker {
  uint64_t start_ns;
  uint32_t rate_hz;
  uint32_t max_catchup; /* ticks run at most per steerd_ticker_due call */
  uint64_t index;       /* schedule slots consumed (run or skipped) */
  uint64_t ran;         /* ticks run */
  uint64_t skipped;     /* ticks skipped after stalls */
  uint64_t overruns;    /* calls that found more than one tick due */
} steerd_ticker;

void steerd_ticker_init(steerd_ticker *t, uint32_t rate_hz, uint64_t now_ns, uint32_t max_catchup);
/* The absolute time of schedule slot k (k = 1 is one period after start):
 * start + floor(k * 1e9 / rate) ns. */
uint64_t steerd_ticker_slot_ns(const steerd_ticker *t, uint64_t k);
/* The absolute time of the next tick. */
uint64_t steerd_ticker_deadline(const steerd_ticker *t);
/* How many ticks to run now (0..max_catchup); consumes them from the schedule. */
uint32_t steerd_ticker_due(steerd_ticker *t, uint64_t now_ns);
/* Nanoseconds until the next tick is due (0 if already due). */
uint64_t steerd_ticker_wait_ns(const steerd_ticker *t, uint64_t now_ns);

#endif /* STEERD_TICKER_H */
