/* fuzz_check.h: FUZZ_CHECK and the entry point of every libFuzzer target of
 * fuzz/ (fuzz_common.h adds the protocol's checks for the decoders' targets).
 *
 * A failed check prints what broke and aborts, which libFuzzer reports as a
 * crash and saves the input. FUZZ_CHECK does not depend on NDEBUG. */
#ifndef STEERD_FUZZ_CHECK_H
#define STEERD_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                                     \
  do {                                                                                                       \
    if (!(cond)) {                                                                                           \
      fprintf(stderr, "fuzz check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);                        \
      abort();                                                                                               \
    }                                                                                                        \
  } while (0)

#endif /* STEERD_FUZZ_CHECK_H */
