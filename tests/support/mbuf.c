/* mbuf.c: see mbuf.h. */
#include "mbuf.h"

#include <string.h>

void mb_init(mbuf *m) {
  msgpack_sbuffer_init(&m->sb);
  msgpack_packer_init(&m->pk, &m->sb, msgpack_sbuffer_write);
}
void mb_free(mbuf *m) { msgpack_sbuffer_destroy(&m->sb); }
void mb_str(mbuf *m, const char *s) { msgpack_pack_str_with_body(&m->pk, s, strlen(s)); }
void mb_cmd(mbuf *m, unsigned type, uint32_t rid, unsigned nkeys) {
  msgpack_pack_array(&m->pk, 3);
  msgpack_pack_unsigned_int(&m->pk, type);
  msgpack_pack_uint32(&m->pk, rid);
  msgpack_pack_map(&m->pk, nkeys);
}
