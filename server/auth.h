/* auth.h: signed session tokens and roles (pure: no clock, no I/O).
 *
 * A token is three dot-separated ASCII parts:
 *
 *   stk1.<base64url(payload)>.<base64url(mac)>        (base64url without padding)
 *
 *   payload  msgpack [1, name str <= 64 bytes, role str, expires_at uint, issued_at uint]
 *            (times in Unix seconds)
 *   mac      crypto_auth (HMAC-SHA512-256, 32 bytes) of the ASCII text "stk1.<payload part>"
 *            under key = crypto_generichash (BLAKE2b, 32 bytes, unkeyed) of the server secret
 *
 * The MAC is checked (in constant time) before anything in the payload is read.
 * Every crypto primitive is libsodium's. */
#ifndef STEERD_AUTH_H
#define STEERD_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define STEERD_AUTH_MIN_SECRET_BYTES 16   /* shorter secrets are refused */
#define STEERD_AUTH_MAX_SECRET_BYTES 1024 /* longer ones too */
#define STEERD_AUTH_MAX_TOKEN_BYTES  1024 /* = PROTO_MAX_TOKEN_BYTES */
#define STEERD_AUTH_MAX_NAME_BYTES   64   /* = PROTO_MAX_NAME_BYTES */
#define STEERD_AUTH_KEY_BYTES        32
#define STEERD_AUTH_PREFIX           "stk1."

typedef enum steerd_role {
  STEERD_ROLE_OBSERVER = 0,   /* snapshots, events, QUERY, PING */
  STEERD_ROLE_CONTROLLER = 1, /* also SPAWN, and commands its own agents */
  STEERD_ROLE_ADMIN = 2,      /* commands every agent */
  STEERD_ROLE_COUNT
} steerd_role;

typedef enum steerd_auth_error {
  STEERD_AUTH_OK = 0,
  STEERD_AUTH_EINVAL = -1,     /* bad argument: empty name, unknown role, buffer too small */
  STEERD_AUTH_ESECRET = -2,    /* secret shorter than STEERD_AUTH_MIN_SECRET_BYTES or too long */
  STEERD_AUTH_EMALFORMED = -3, /* not a token: prefix, parts, base64, length, payload shape */
  STEERD_AUTH_EFORGED = -4,    /* the MAC does not match: another secret, or tampered */
  STEERD_AUTH_EEXPIRED = -5,   /* now >= expires_at */
  STEERD_AUTH_ERROR_COUNT = 6
} steerd_auth_error;

/* The key derived from the secret. Caller-owned; steerd_auth_init fills it. */
typedef struct steerd_auth {
  uint8_t key[STEERD_AUTH_KEY_BYTES];
} steerd_auth;

typedef struct steerd_token {
  char name[STEERD_AUTH_MAX_NAME_BYTES + 1]; /* UTF-8, no NUL inside */
  steerd_role role;
  uint64_t expires_at; /* Unix seconds: refused from this second on */
  uint64_t issued_at;  /* Unix seconds; informational */
} steerd_token;

/* Derives the key. 0, or ESECRET. */
int steerd_auth_init(steerd_auth *a, const char *secret, size_t secret_len);
/* Writes the NUL-terminated token into out. Returns its length, or EINVAL. */
int steerd_auth_issue(const steerd_auth *a, const steerd_token *t, char *out, size_t cap);
/* Checks the token (len bytes, no NUL needed) at Unix time now. On 0, *out holds
 * the payload; on EEXPIRED too (for logs). EMALFORMED, EFORGED otherwise. */
int steerd_auth_verify(const steerd_auth *a, const char *token, size_t len, uint64_t now, steerd_token *out);

const char *steerd_auth_strerror(int code);
/* "observer", "controller", "admin"; NULL when out of range. */
const char *steerd_role_name(int role);
/* The role of a name, or -1. */
int steerd_role_parse(const char *name);

#endif /* STEERD_AUTH_H */
