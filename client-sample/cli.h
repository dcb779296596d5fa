/* cli.h: what the steerd-client command-line tool's files share: the parsed
 * command line, its help table, and the helpers every command uses. */
#ifndef STEERD_CLI_H
#define STEERD_CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "client.h"

/* Exit codes. */
#define EXIT_REPLY_ERROR 1 /* the server answered ERROR */
#define EXIT_USAGE       2
#define EXIT_CONNECTION  3 /* connect failed, timed out or dropped */

#define MAX_OPTS 32

typedef struct opt {
  const char *key; /* without "--" */
  const char *value;
} opt;

typedef struct args {
  const char *host;
  uint16_t port;
  const char *name;
  const char *token; /* --token, else STEERD_TOKEN; NULL: none */
  uint32_t timeout_ms;
  const char *cmd;
  const char *pos[4]; /* positional arguments after the subcommand */
  int npos;
  opt opts[MAX_OPTS];
  int nopts;
  int events_only;
  int interp; /* watch --interp */
  int delta;  /* --delta, else STEERD_DELTA: ask for delta snapshots (PROTOCOL.md 7.6) */
} args;

typedef struct cmd_help {
  const char *name;
  const char *const opts[8]; /* the command's options, without "--" */
  const char *text;
} cmd_help;

/* Every command's help, in the order usage() prints them. */
extern const cmd_help commands[];
extern const size_t command_count;

/* Set by SIGINT and SIGTERM: long-running commands stop and summarise. */
extern volatile sig_atomic_t g_stop;

/* Help and the command line (cli_args.c). */
const cmd_help *find_command(const char *name);
void usage(FILE *f);
void usage_command(FILE *f, const cmd_help *h);
int parse_u64(const char *s, uint64_t max, uint64_t *out);
int parse_u32(const char *s, uint32_t *out);
int parse_float(const char *s, float *out);
int parse_xy(const char *s, proto_vec2 *out);
int parse_points(const char *s, proto_vec2 *pts, uint32_t cap, uint32_t *count);
int find_name(const char *(*name_of)(uint32_t), uint32_t count, const char *s);
int parse_args(int argc, char **argv, args *a);
const char *opt_get(const args *a, const char *key);
int check_opts(const args *a, const char *const *allowed, int npos_min, int npos_max);
int bad_value(const args *a, const char *what, const char *v);
/* Option --key as a float in [lo, hi] into *out (kept when the option is
 * absent): 0, or bad_value's exit code naming it as what. */
int opt_float(const args *a, const char *key, float lo, float hi, const char *what, float *out);

/* Output and connections (steerd_client.c). */
void print_num(FILE *f, const char *fmt, double v);
void print_server_error(const proto_error_msg *e);
int report(steerd_client *c, const char *what, int r, const proto_server_msg *reply);
void print_frame(void *user, const steerd_client_frame *f);
void print_event(void *user, const proto_event *e);
steerd_client *open_client(const args *a, const steerd_client_callbacks *cb, int *exit_code);
void close_client(steerd_client *c);

/* watch (cli_watch.c). */
int cmd_watch(const args *a);

/* bots (cli_bots.c). */
int cmd_bots(const args *a);
/* top (cli_top.c). */
int cmd_top(const args *a);

#endif /* STEERD_CLI_H */
