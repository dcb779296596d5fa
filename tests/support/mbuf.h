/* mbuf.h: build msgpack messages by hand for the decoder tests (messages the
 * encoders would never write: odd key orders, wrong types, extra keys), into a
 * growing msgpack-c buffer: m.sb.data, m.sb.size once packed. */
#ifndef STEERD_MBUF_H
#define STEERD_MBUF_H

#include <msgpack.h>
#include <stdint.h>

typedef struct mbuf {
  msgpack_sbuffer sb;
  msgpack_packer pk;
} mbuf;

void mb_init(mbuf *m);
void mb_free(mbuf *m);
/* A string (a map key or a value). */
void mb_str(mbuf *m, const char *s);
/* [type, request_id, {nkeys...}] */
void mb_cmd(mbuf *m, unsigned type, uint32_t rid, unsigned nkeys);

#endif /* STEERD_MBUF_H */
