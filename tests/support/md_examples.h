/* md_examples.h: the byte examples of protocol/PROTOCOL.md, checked against the
 * encoders that write them (test_protocol.c, test_map_msg.c). In the document an
 * example is a marker line "<!-- MARKER: NAME -->", then (nothing but blank space
 * between) a fenced block of hex bytes. */
#ifndef STEERD_MD_EXAMPLES_H
#define STEERD_MD_EXAMPLES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes example NAME into buf (cap bytes); returns its length, 0 if it does not fit. */
typedef size_t (*steerd_example_fn)(uint8_t *buf, size_t cap);

typedef struct steerd_example {
  const char *name;
  steerd_example_fn fn;
} steerd_example;

/* Asserts (Check) that the document at md_path holds every one of the count
 * examples under `marker` exactly once, no unknown one, each with exactly the
 * bytes its encoder writes; on a difference the encoder's bytes go to stderr. */
void steerd_md_examples_check(const char *md_path, const char *marker, const steerd_example *examples,
                              size_t count);

/* Prints every example as the document holds it (marker line and hex block). */
void steerd_md_examples_print(FILE *out, const char *marker, const steerd_example *examples, size_t count);

/* n bytes as hex, 16 to a line. */
void steerd_dump_hex(FILE *out, const uint8_t *p, size_t n);

#endif
