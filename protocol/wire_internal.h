/* wire_internal.h: what the protocol/ sources share and nothing outside them
 * includes: the msgpack writer over a caller's buffer, the strict pull reader
 * and its rd_* field readers (wire.c), the name and field tables (names.c), and
 * the few encoders and decoders one message file borrows from another.
 * The public API is protocol.h; nothing here is part of it. */
#ifndef STEERD_PROTOCOL_WIRE_INTERNAL_H
#define STEERD_PROTOCOL_WIRE_INTERNAL_H

#include "protocol.h"

#include <math.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An orientation reduced into (-pi, pi] as the spec asks: in double from the
 * value as sent, the float nearest -pi read as +pi (the same heading), and
 * floats in (pi, PROTO_PI_F] kept, so a float read back maps to itself. This
 * is the reduction the simulation applies to its own angles (the server's
 * tests compare the two), so a decoded orientation is one an agent holds.
 * proto_wrap_angle leaves floats already inside alone. */
static inline float proto_wrap_angle_d(double a) {
  const double pi = 3.14159265358979323846, two_pi = 6.28318530717958647692;
  if (a > (double)PROTO_PI_F || a <= -(double)PROTO_PI_F) {
    a = fmod(a + pi, two_pi);
    if (a <= 0.0)
      a += two_pi;
    a -= pi;
  }
  float f = (float)a;
  return f <= -PROTO_PI_F ? PROTO_PI_F : f;
}

static inline float proto_wrap_angle(float a) {
  return a > PROTO_PI_F || a <= -PROTO_PI_F ? proto_wrap_angle_d((double)a) : a;
}

/* Value constraints of float fields. */
enum { NUM_ANY = 0, NUM_NONNEG, NUM_POSITIVE };

typedef struct float_field {
  const char *name;
  size_t offset;
  int sign; /* NUM_* */
} float_field;

/* ---- names.c: names on the wire and the float fields of limits and params ---- */

extern const char *const model_names[PROTO_MODEL_COUNT];
extern const char *const behaviour_names[PROTO_BEHAVIOUR_COUNT];
extern const char *const facing_names[PROTO_FACING_COUNT];
extern const char *const combine_names[PROTO_COMBINE_COUNT];
extern const char *const mode_names[PROTO_PATH_MODE_COUNT];
extern const char *const cornering_names[PROTO_CORNER_COUNT];
extern const char *const snapshot_mode_names[PROTO_SNAPSHOTS_COUNT];
extern const char *const stuck_reaction_names[PROTO_STUCK_REACTION_COUNT];
extern const char *const arrival_names[PROTO_ARRIVAL_COUNT];
extern const char *const goto_status_names[PROTO_GOTO_STATUS_END]; /* [0] "none" is never on the wire */
extern const char *const goto_reason_names[PROTO_GOTO_REASON_COUNT];
extern const float_field param_fields[PROTO_PARAM_COUNT];
extern const float_field limit_fields[PROTO_LIMIT_COUNT];
int64_t code_index(int code);

/* ---- wire.c: encoding into a fixed buffer -------------------------------------- */

typedef struct writer {
  uint8_t *buf;
  size_t cap, len;
  int overflowed;
} writer;

void writer_init(writer *w, msgpack_packer *pk, uint8_t *buf, size_t cap);
size_t writer_done(const writer *w);
void pack_key(msgpack_packer *pk, const char *key);
void pack_kf(msgpack_packer *pk, const char *key, float v);
void pack_ku(msgpack_packer *pk, const char *key, uint64_t v);
void pack_ks(msgpack_packer *pk, const char *key, const char *v);
unsigned popcount32(uint32_t v);

/* ---- wire.c: decoding, the reader ------------------------------------------------ */

typedef enum mp_kind {
  MP_NIL,
  MP_BOOL,
  MP_UINT,
  MP_INT,
  MP_FLOAT,
  MP_STR,
  MP_BIN,
  MP_ARRAY,
  MP_MAP,
  MP_EXT
} mp_kind;

typedef struct mp_val {
  mp_kind kind;
  uint64_t u;       /* MP_UINT value, MP_BOOL, or count / length */
  int64_t i;        /* MP_INT value (< 0) */
  double f;         /* MP_FLOAT */
  const uint8_t *s; /* MP_STR / MP_BIN bytes */
} mp_val;

#define PATH_CAP 96

typedef struct reader {
  const uint8_t *p;
  size_t len, pos;
  proto_error_info *err;
  bool strict; /* unknown keys are errors (client -> server) */
  size_t path_len;
  char path[PATH_CAP];
} reader;

/* A map's field reader: see rd_map. */
typedef int (*field_fn)(reader *r, int key, void *ctx);

int fail(reader *r, int code, const char *reason);
size_t path_push(reader *r, const char *name);
size_t path_push_index(reader *r, uint32_t i);
void path_pop(reader *r, size_t old);
int fail_at(reader *r, const char *field, int code, const char *reason);
int need(reader *r, size_t n);
int rd_val(reader *r, mp_val *v);
int rd_skip(reader *r);
int bad(reader *r, const char *reason);
int rd_uint(reader *r, uint64_t max, uint64_t *out);
int rd_u32(reader *r, uint32_t *out);
int rd_u64(reader *r, uint64_t *out);
int rd_int(reader *r, int64_t min, int64_t max, int64_t *out);
int rd_float(reader *r, int sign, float *out);
int rd_angle(reader *r, float *out);
int rd_bool(reader *r, uint8_t *out);
int rd_str(reader *r, size_t max, const uint8_t **s, size_t *n);
int rd_enum(reader *r, const char *const *names, uint32_t count, uint8_t *out);
int rd_array(reader *r, uint32_t min, uint32_t max, uint32_t *count);
int rd_point(reader *r, proto_vec2 *out);
int rd_map(reader *r, const char *const *keys, int nkeys, uint32_t required, field_fn fn, void *ctx,
           uint32_t *seen_out);
void reader_init(reader *r, const uint8_t *data, size_t len, proto_error_info *err, bool strict);
int rd_frame(reader *r, uint32_t *n, uint64_t *type);
int rd_frame_u32(reader *r, const char *name, uint32_t *out);
int rd_end(reader *r);
int finish(reader *r, int rc);
int rd_body(reader *r, const char *const *keys, int nkeys, uint32_t required, field_fn fn, void *ctx,
            uint32_t *seen);
int rd_elem_uint(reader *r, const char *name, uint64_t max, uint64_t *out);
int rd_frame_expect(reader *r, uint8_t want, uint32_t min, uint32_t max, uint32_t *n, const char *what);

/* ---- commands.c: objects that server messages carry too (QUERY's ACK) ----------- */

void pack_limits(msgpack_packer *pk, const proto_limits *l);
int rd_limits(reader *r, proto_limits *l);
/* The seven tuning keys of PARAMS (PROTOCOL.md 5.2) as a map of their own:
 * QUERY's "tuning" (6.8). Packed all seven; read all seven, nothing else. */
void pack_tuning(msgpack_packer *pk, const proto_tuning *t);
int rd_tuning(reader *r, proto_tuning *t);
int agent_fn(reader *r, int key, void *ctx);

/* ---- snapshots.c: a SNAPSHOT's elements after the type (decode_server's SNAPSHOT) */

int decode_snapshot_body(reader *r, proto_snapshot_header *h, proto_pose *poses, proto_pose_q *qposes,
                         uint32_t cap, uint32_t *count);

/* ---- map_msg.c: the bodies of ADD_OBSTACLE and REMOVE_OBSTACLE ------------------ */

int pack_obstacle_command(msgpack_packer *pk, const proto_command *cmd); /* -1: invalid */
int rd_add_obstacle(reader *r, proto_add_obstacle *a);
int rd_remove_obstacle(reader *r, proto_remove_obstacle *o);

#endif
