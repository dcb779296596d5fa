/* md_examples.c: see md_examples.h. */
#include "md_examples.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

/* The largest example: a whole message, with room for a longer one in the document. */
#define EXAMPLE_BYTES (PROTO_MAX_MESSAGE_BYTES + 64)

void steerd_dump_hex(FILE *out, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    fprintf(out, "%02x%s", p[i], (i + 1) % 16 == 0 || i + 1 == n ? "\n" : " ");
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *data = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
  size_t got = data ? fread(data, 1, (size_t)sz, f) : 0;
  fclose(f);
  if (data)
    data[got] = '\0';
  return data;
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

static int blank(char ch) { return ch == ' ' || ch == '\n' || ch == '\r'; }

void steerd_md_examples_check(const char *md_path, const char *marker, const steerd_example *examples,
                              size_t count) {
  char *md = read_file(md_path);
  ck_assert_msg(md != NULL, "cannot read %s", md_path);
  char open[64];
  snprintf(open, sizeof open, "<!-- %s: ", marker);
  int *seen = calloc(count, sizeof *seen);
  uint8_t *want = malloc(EXAMPLE_BYTES), *got = malloc(EXAMPLE_BYTES);
  ck_assert(seen && want && got);
  for (char *p = strstr(md, open); p; p = strstr(p + 1, open)) {
    char *name = p + strlen(open);
    char *end = strstr(name, " -->");
    ck_assert_ptr_nonnull(end);
    size_t len = (size_t)(end - name), k;
    for (k = 0; k < count; k++)
      if (strlen(examples[k].name) == len && !memcmp(examples[k].name, name, len))
        break;
    ck_assert_msg(k < count, "unknown %s '%.*s' in %s", marker, (int)len, name, md_path);
    ck_assert_msg(!seen[k], "%s %s appears twice", marker, examples[k].name);
    seen[k] = 1;
    char *fence = strstr(end, "```");
    ck_assert_ptr_nonnull(fence);
    for (char *q = end + 4; q < fence; q++)
      ck_assert_msg(blank(*q), "text between marker and fence of %s %s", marker, examples[k].name);
    char *body = strchr(fence, '\n');
    ck_assert_ptr_nonnull(body);
    char *close = strstr(body, "```");
    ck_assert_ptr_nonnull(close);
    size_t nb = 0;
    for (char *q = body; q < close;) {
      if (blank(*q)) {
        q++;
        continue;
      }
      int hi = hexval(q[0]), lo = hexval(q[1]);
      ck_assert_msg(hi >= 0 && lo >= 0, "bad hex in %s %s", marker, examples[k].name);
      ck_assert_msg(nb < EXAMPLE_BYTES, "%s %s is longer than any message", marker, examples[k].name);
      want[nb++] = (uint8_t)(hi * 16 + lo);
      q += 2;
    }
    size_t n = examples[k].fn(got, EXAMPLE_BYTES);
    if (n != nb || memcmp(got, want, n) != 0) {
      fprintf(stderr, "%s: %s %s differs from the encoder, which writes:\n", md_path, marker,
              examples[k].name);
      steerd_dump_hex(stderr, got, n);
    }
    ck_assert_uint_eq(nb, n);
    ck_assert_mem_eq(got, want, n);
  }
  for (size_t k = 0; k < count; k++)
    ck_assert_msg(seen[k], "%s lacks %s %s", md_path, marker, examples[k].name);
  free(got);
  free(want);
  free(seen);
  free(md);
}

void steerd_md_examples_print(FILE *out, const char *marker, const steerd_example *examples, size_t count) {
  uint8_t *b = malloc(EXAMPLE_BYTES);
  if (!b)
    return;
  for (size_t k = 0; k < count; k++) {
    size_t n = examples[k].fn(b, EXAMPLE_BYTES);
    fprintf(out, "<!-- %s: %s -->\n```\n", marker, examples[k].name);
    steerd_dump_hex(out, b, n);
    fprintf(out, "```\n\n");
  }
  free(b);
}
