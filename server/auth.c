/* auth.c: see auth.h. The payload is a 5-element msgpack array written and read
 * here by hand (a fixed, tiny shape); the crypto is libsodium's. */
#include "auth.h"

#include <sodium.h>
#include <string.h>

/* Payload: fixarray, version, name (str8 at most), role, two uint64 at most. */
#define PAYLOAD_MAX_BYTES (1 + 1 + 2 + STEERD_AUTH_MAX_NAME_BYTES + 1 + 16 + 9 + 9)
#define PREFIX_LEN        (sizeof(STEERD_AUTH_PREFIX) - 1)

static const char *const role_names[STEERD_ROLE_COUNT] = {"observer", "controller", "admin"};

static const char *const error_texts[STEERD_AUTH_ERROR_COUNT] = {
    "ok",
    "invalid argument",
    "the secret must be 16 to 1024 bytes",
    "not a steerd token",
    "the token's signature does not match (forged, tampered with, or signed with another secret)",
    "the token has expired"};

const char *steerd_auth_strerror(int code) {
  return code <= 0 && code > -STEERD_AUTH_ERROR_COUNT ? error_texts[-code] : "unknown error";
}

const char *steerd_role_name(int role) {
  return role >= 0 && role < STEERD_ROLE_COUNT ? role_names[role] : NULL;
}

int steerd_role_parse(const char *name) {
  for (int i = 0; name && i < STEERD_ROLE_COUNT; i++)
    if (strcmp(name, role_names[i]) == 0)
      return i;
  return -1;
}

int steerd_auth_init(steerd_auth *a, const char *secret, size_t secret_len) {
  if (!secret || secret_len < STEERD_AUTH_MIN_SECRET_BYTES || secret_len > STEERD_AUTH_MAX_SECRET_BYTES)
    return STEERD_AUTH_ESECRET;
  if (sodium_init() < 0)
    return STEERD_AUTH_EINVAL;
  crypto_generichash(a->key, sizeof a->key, (const unsigned char *)secret, secret_len, NULL, 0);
  return STEERD_AUTH_OK;
}

/* ---- payload ---------------------------------------------------------------- */

static size_t put_str(uint8_t *p, const char *s, size_t n) {
  size_t k = 0;
  if (n < 32) {
    p[k++] = (uint8_t)(0xa0u | n);
  } else {
    p[k++] = 0xd9;
    p[k++] = (uint8_t)n;
  }
  memcpy(p + k, s, n);
  return k + n;
}

static size_t put_uint(uint8_t *p, uint64_t v) {
  int bytes;
  if (v < 128) {
    p[0] = (uint8_t)v;
    return 1;
  }
  if (v <= 0xffu) {
    p[0] = 0xcc, bytes = 1;
  } else if (v <= 0xffffu) {
    p[0] = 0xcd, bytes = 2;
  } else if (v <= 0xffffffffu) {
    p[0] = 0xce, bytes = 4;
  } else {
    p[0] = 0xcf, bytes = 8;
  }
  for (int i = 0; i < bytes; i++)
    p[1 + i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
  return 1 + (size_t)bytes;
}

typedef struct cursor {
  const uint8_t *p, *end;
} cursor;

static int get_uint(cursor *c, uint64_t *out) {
  if (c->p >= c->end)
    return -1;
  uint8_t t = *c->p++;
  int bytes;
  if (t < 0x80) {
    *out = t;
    return 0;
  }
  switch (t) {
  case 0xcc:
    bytes = 1;
    break;
  case 0xcd:
    bytes = 2;
    break;
  case 0xce:
    bytes = 4;
    break;
  case 0xcf:
    bytes = 8;
    break;
  default:
    return -1;
  }
  if (c->end - c->p < bytes)
    return -1;
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++)
    v = (v << 8) | *c->p++;
  *out = v;
  return 0;
}

static int get_str(cursor *c, const uint8_t **s, size_t *n) {
  if (c->p >= c->end)
    return -1;
  uint8_t t = *c->p++;
  if ((t & 0xe0u) == 0xa0u) {
    *n = t & 0x1fu;
  } else if (t == 0xd9 && c->p < c->end) {
    *n = *c->p++;
  } else {
    return -1;
  }
  if ((size_t)(c->end - c->p) < *n)
    return -1;
  *s = c->p;
  c->p += *n;
  return 0;
}

/* Strict UTF-8 (no overlongs, no surrogates, <= U+10FFFF) without NUL. */
static int utf8_ok(const uint8_t *s, size_t n) {
  for (size_t i = 0; i < n;) {
    uint8_t b = s[i];
    size_t len;
    uint32_t cp;
    if (b == 0)
      return 0;
    if (b < 0x80) {
      i++;
      continue;
    }
    if (b >= 0xc2 && b <= 0xdf)
      len = 2, cp = b & 0x1fu;
    else if (b >= 0xe0 && b <= 0xef)
      len = 3, cp = b & 0x0fu;
    else if (b >= 0xf0 && b <= 0xf4)
      len = 4, cp = b & 0x07u;
    else
      return 0;
    if (n - i < len)
      return 0;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xc0u) != 0x80u)
        return 0;
      cp = (cp << 6) | (s[i + k] & 0x3fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return 0;
    i += len;
  }
  return 1;
}

static int parse_payload(const uint8_t *p, size_t n, steerd_token *t) {
  cursor c = {p, p + n};
  uint64_t version;
  const uint8_t *name, *role;
  size_t name_len, role_len;
  if (n < 1 || *c.p++ != 0x95 || get_uint(&c, &version) || version != 1 || get_str(&c, &name, &name_len) ||
      get_str(&c, &role, &role_len) || get_uint(&c, &t->expires_at) || get_uint(&c, &t->issued_at) ||
      c.p != c.end)
    return STEERD_AUTH_EMALFORMED;
  if (name_len == 0 || name_len > STEERD_AUTH_MAX_NAME_BYTES || !utf8_ok(name, name_len))
    return STEERD_AUTH_EMALFORMED;
  char role_text[16];
  if (role_len >= sizeof role_text)
    return STEERD_AUTH_EMALFORMED;
  memcpy(role_text, role, role_len);
  role_text[role_len] = '\0';
  int r = steerd_role_parse(role_text);
  if (r < 0)
    return STEERD_AUTH_EMALFORMED;
  memcpy(t->name, name, name_len);
  t->name[name_len] = '\0';
  t->role = (steerd_role)r;
  return STEERD_AUTH_OK;
}

/* ---- issue and verify ----------------------------------------------------------- */

int steerd_auth_issue(const steerd_auth *a, const steerd_token *t, char *out, size_t cap) {
  size_t name_len = strnlen(t->name, sizeof t->name);
  const char *role = steerd_role_name((int)t->role);
  if (!role || name_len == 0 || name_len > STEERD_AUTH_MAX_NAME_BYTES ||
      !utf8_ok((const uint8_t *)t->name, name_len))
    return STEERD_AUTH_EINVAL;
  uint8_t payload[PAYLOAD_MAX_BYTES];
  size_t n = 0;
  payload[n++] = 0x95;
  payload[n++] = 0x01;
  n += put_str(payload + n, t->name, name_len);
  n += put_str(payload + n, role, strlen(role));
  n += put_uint(payload + n, t->expires_at);
  n += put_uint(payload + n, t->issued_at);

  size_t body_b64 = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  size_t mac_b64 = sodium_base64_ENCODED_LEN(crypto_auth_BYTES, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  /* The encoded lengths count a NUL each: prefix + body + '.' + mac + NUL fits in this. */
  if (!out || cap < PREFIX_LEN + body_b64 + mac_b64)
    return STEERD_AUTH_EINVAL;
  memcpy(out, STEERD_AUTH_PREFIX, PREFIX_LEN);
  sodium_bin2base64(out + PREFIX_LEN, body_b64, payload, n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  size_t signed_len = strlen(out);
  uint8_t mac[crypto_auth_BYTES];
  crypto_auth(mac, (const unsigned char *)out, signed_len, a->key);
  out[signed_len] = '.';
  sodium_bin2base64(out + signed_len + 1, mac_b64, mac, sizeof mac, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  size_t len = strlen(out);
  if (len > STEERD_AUTH_MAX_TOKEN_BYTES)
    return STEERD_AUTH_EINVAL;
  return (int)len;
}

static int is_b64url(char ch) {
  return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
         ch == '_';
}

int steerd_auth_verify(const steerd_auth *a, const char *token, size_t len, uint64_t now, steerd_token *out) {
  if (!token || len > STEERD_AUTH_MAX_TOKEN_BYTES || len < PREFIX_LEN ||
      memcmp(token, STEERD_AUTH_PREFIX, PREFIX_LEN) != 0)
    return STEERD_AUTH_EMALFORMED;
  /* Exactly one more dot, between two non-empty base64url parts. */
  size_t dot = 0;
  for (size_t i = PREFIX_LEN; i < len; i++) {
    if (token[i] == '.') {
      if (dot)
        return STEERD_AUTH_EMALFORMED;
      dot = i;
    } else if (!is_b64url(token[i])) {
      return STEERD_AUTH_EMALFORMED;
    }
  }
  if (!dot || dot == PREFIX_LEN || dot + 1 == len)
    return STEERD_AUTH_EMALFORMED;
  uint8_t mac[crypto_auth_BYTES];
  size_t mac_len;
  if (sodium_base642bin(mac, sizeof mac, token + dot + 1, len - dot - 1, NULL, &mac_len, NULL,
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
      mac_len != sizeof mac)
    return STEERD_AUTH_EMALFORMED;
  if (crypto_auth_verify(mac, (const unsigned char *)token, dot, a->key) != 0)
    return STEERD_AUTH_EFORGED;
  /* Authentic from here on; still read strictly. */
  uint8_t payload[PAYLOAD_MAX_BYTES];
  size_t n;
  if (sodium_base642bin(payload, sizeof payload, token + PREFIX_LEN, dot - PREFIX_LEN, NULL, &n, NULL,
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0)
    return STEERD_AUTH_EMALFORMED;
  steerd_token t;
  memset(&t, 0, sizeof t);
  int rc = parse_payload(payload, n, &t);
  if (rc != STEERD_AUTH_OK)
    return rc;
  if (out)
    *out = t;
  return now >= t.expires_at ? STEERD_AUTH_EEXPIRED : STEERD_AUTH_OK;
}
