/* ticker.c: see ticker.h. */
#include "ticker.h"

void steerd_ticker_init(steerd_ticker *t, uint32_t rate_hz, uint64_t now_ns, uint32_t max_catchup) {
  t->start_ns = now_ns;
  t->rate_hz = rate_hz ? rate_hz : 1;
  t->max_catchup = max_catchup ? max_catchup : 1;
  t->index = 0;
  t->ran = t->skipped = t->overruns = 0;
}

/* Tick k is due at start + k / rate seconds (k = 1 is one period after start). */
static uint64_t slot_time(const steerd_ticker *t, uint64_t k) {
  return t->start_ns + (k / t->rate_hz) * 1000000000ull + (k % t->rate_hz) * 1000000000ull / t->rate_hz;
}

uint64_t steerd_ticker_slot_ns(const steerd_ticker *t, uint64_t k) { return slot_time(t, k); }

uint64_t steerd_ticker_deadline(const steerd_ticker *t) { return slot_time(t, t->index + 1); }

uint32_t steerd_ticker_due(steerd_ticker *t, uint64_t now_ns) {
  if (now_ns < slot_time(t, t->index + 1))
    return 0;
  /* Number of slots whose time has come: largest k with slot_time(k) <= now. */
  uint64_t elapsed = now_ns - t->start_ns;
  uint64_t k =
      (elapsed / 1000000000ull) * t->rate_hz + ((elapsed % 1000000000ull) * t->rate_hz) / 1000000000ull;
  while (slot_time(t, k + 1) <= now_ns) /* integer rounding guards */
    k++;
  while (k > t->index && slot_time(t, k) > now_ns)
    k--;
  uint64_t due = k - t->index;
  if (due > 1)
    t->overruns++;
  if (due > t->max_catchup) {
    t->skipped += due - t->max_catchup;
    due = t->max_catchup;
  }
  t->index = k;
  t->ran += due;
  return (uint32_t)due;
}

uint64_t steerd_ticker_wait_ns(const steerd_ticker *t, uint64_t now_ns) {
  uint64_t d = steerd_ticker_deadline(t);
  return d > now_ns ? d - now_ns : 0;
}
