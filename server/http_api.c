/* http_api.c: the live view's JSON API on the HTTP port (PROTOCOL.md 15):
 * /api/map (the obstacles), /api/agent (the inspected agent: its state,
 * route and neighbours) and /api/routes (the routes and targets of the
 * agents in a circle), each behind the token when a secret is configured. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_internal.h"
#include "map_json.h"

#define API_ROUTES_MAX 100u /* agents /api/routes answers at most, nearest the centre first */
#define API_NEIGHBOURS 32u  /* as many as separation reads (max_neighbours' cap) */

static json_t *vec_json(vec2 v) { return json_pack("[f,f]", (double)v.x, (double)v.y); }

/* With a secret, the API wants a token of any role in ?token=. */
static int token_ok(steerd_http *h, struct lws *wsi) {
  if (!h->views.auth_on)
    return 1;
  char arg[STEERD_AUTH_MAX_TOKEN_BYTES + 8];
  const char *token = lws_get_urlarg_by_name(wsi, "token=", arg, sizeof arg);
  steerd_token t;
  return token &&
         steerd_auth_verify(&h->views.auth, token, strlen(token), (uint64_t)time(NULL), &t) == STEERD_AUTH_OK;
}

static int text_status(char **body, size_t *len, int status, const char *text) {
  *body = strdup(text);
  *len = *body ? strlen(*body) : 0;
  return status;
}

static int json_status(json_t *o, char **body, size_t *len) {
  *body = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  *len = *body ? strlen(*body) : 0;
  return *body ? HTTP_STATUS_OK : HTTP_STATUS_INTERNAL_SERVER_ERROR;
}

char *steerd_http_map_json(const steerd_http *h, const char *type, size_t limit, size_t *len) {
  const steer_world *w = steerd_server_world(h->server);
  const steer_world_config *wc = steer_world_get_config(w);
  return steerd_map_json(steer_world_map(w), wc->min, wc->max, type, limit, len);
}

/* Where the agent is going: its target (a point, or where its target agent
 * is) and its path (a GOTO's route is one), into o. */
static void put_route(json_t *o, const steer_world *w, const steer_agent_info *info) {
  const steer_target *tg = &info->behaviour.target;
  if (tg->kind == STEER_TARGET_POINT) {
    json_object_set_new(o, "target_m", vec_json(tg->point));
  } else if (tg->kind == STEER_TARGET_AGENT) {
    steer_agent_info other;
    json_object_set_new(o, "target_agent", json_integer(tg->agent));
    if (steer_world_get(w, tg->agent, &other) == STEER_OK)
      json_object_set_new(o, "target_m", vec_json(other.state.position));
  }
  steer_path path;
  if (info->path >= 0 && steer_world_path_get(w, info->path, &path) == STEER_OK) {
    json_t *pts = json_array();
    for (uint32_t i = 0; i < path.count; i++)
      json_array_append_new(pts, vec_json(path.points[i]));
    json_object_set_new(o, "path_m", pts);
    json_object_set_new(o, "path_node", json_integer(info->cursor.node));
    json_object_set_new(o, "path_mode", json_string(proto_path_mode_name(path.mode)));
  }
}

/* The agents its separation and avoidance read (none when both are off),
 * and how far they reach. */
static void put_neighbours(json_t *o, const steer_world *w, const steer_agent_info *info) {
  steer_id ids[API_NEIGHBOURS];
  float reach = 0.0f;
  int n = steer_world_neighbours(w, info->id, ids, API_NEIGHBOURS, &reach);
  json_t *a = json_array();
  for (int i = 0; i < n; i++)
    json_array_append_new(a, json_integer(ids[i]));
  json_object_set_new(o, "neighbours", a);
  json_object_set_new(o, "neighbour_reach_m", json_real(reach));
  json_object_set_new(o, "avoid_weight", json_real(info->behaviour.avoid_weight));
  json_object_set_new(o, "separation_weight", json_real(info->behaviour.separation_weight));
}

/* /api/agent?id=ID: 200 with the agent as JSON, or 404. */
static int agent_json(steerd_http *h, struct lws *wsi, char **body, size_t *len) {
  char arg[128];
  const char *id_text = lws_get_urlarg_by_name(wsi, "id=", arg, sizeof arg);
  char *end = NULL;
  unsigned long long id = id_text ? strtoull(id_text, &end, 10) : 0;
  steer_agent_info info;
  const steer_world *w = steerd_server_world(h->server);
  if (!id_text || !*id_text || *end || id > UINT32_MAX || steer_world_get(w, (steer_id)id, &info) != STEER_OK)
    return text_status(body, len, HTTP_STATUS_NOT_FOUND, "no such agent\n");
  json_t *o = json_object();
  json_object_set_new(o, "id", json_integer(info.id));
  json_object_set_new(o, "tick", json_integer((json_int_t)steer_world_tick(w)));
  json_object_set_new(o, "model", json_string(proto_model_name(info.model)));
  uint32_t kind = info.path >= 0 ? STEER_BEHAVIOUR_FOLLOW_PATH : info.behaviour.kind;
  const char *bname = proto_behaviour_name(kind);
  json_object_set_new(o, "behaviour", bname ? json_string(bname) : json_null());
  json_object_set_new(o, "owner", json_integer(info.owner));
  const char *owner_name = steerd_server_owner_name(h->server, info.owner);
  json_object_set_new(o, "owner_name", owner_name ? json_string(owner_name) : json_null());
  json_object_set_new(o, "arrived", json_boolean(info.arrived));
  json_object_set_new(o, "position_m", vec_json(info.state.position));
  json_object_set_new(o, "orientation_rad", json_real(info.state.orientation));
  json_object_set_new(o, "velocity_m_s", vec_json(info.state.velocity));
  json_object_set_new(o, "max_speed_m_s", json_real(info.limits.max_speed));
  json_object_set_new(o, "radius_m", json_real(info.limits.radius));
  put_route(o, w, &info);
  put_neighbours(o, w, &info);
  return json_status(o, body, len);
}

/* A finite number argument of the URL into *out: 0, or -1 when it is missing or malformed. */
static int number_arg(struct lws *wsi, const char *name, double *out) {
  char arg[64];
  const char *text = lws_get_urlarg_by_name(wsi, name, arg, sizeof arg);
  char *end = NULL;
  double v = text ? strtod(text, &end) : 0.0;
  if (!text || !*text || *end || !(v > -1e7 && v < 1e7))
    return -1;
  *out = v;
  return 0;
}

/* /api/routes?x=X&y=Y&r=R: the routes and targets of the agents within R m
 * of (X, Y), nearest first, at most API_ROUTES_MAX of them; 400 when an
 * argument is missing or out of range. */
static int routes_json(steerd_http *h, struct lws *wsi, char **body, size_t *len) {
  double x, y, r;
  if (number_arg(wsi, "x=", &x) || number_arg(wsi, "y=", &y) || number_arg(wsi, "r=", &r) || !(r > 0.0))
    return text_status(body, len, HTTP_STATUS_BAD_REQUEST,
                       "/api/routes needs x=X&y=Y&r=R: the circle's centre and radius in metres, r > 0\n");
  const steer_world *w = steerd_server_world(h->server);
  steer_id ids[API_ROUTES_MAX];
  uint32_t n = steer_world_query_radius(w, v2((float)x, (float)y), (float)r, ids, API_ROUTES_MAX);
  json_t *o = json_object(), *list = json_array();
  json_object_set_new(o, "tick", json_integer((json_int_t)steer_world_tick(w)));
  for (uint32_t i = 0; i < n; i++) {
    steer_agent_info info;
    if (steer_world_get(w, ids[i], &info) != STEER_OK)
      continue;
    json_t *a = json_object();
    json_object_set_new(a, "id", json_integer(info.id));
    put_route(a, w, &info);
    json_array_append_new(list, a);
  }
  json_object_set_new(o, "agents", list);
  json_object_set_new(o, "complete", json_boolean(n < API_ROUTES_MAX));
  return json_status(o, body, len);
}

int steerd_http_api(steerd_http *h, struct lws *wsi, const char *uri, char **body, size_t *len) {
  int (*answer)(steerd_http *, struct lws *, char **, size_t *) = strcmp(uri, "/api/agent") == 0 ? agent_json
                                                                  : strcmp(uri, "/api/routes") == 0
                                                                      ? routes_json
                                                                      : NULL;
  if (!answer && strcmp(uri, "/api/map") != 0)
    return 0;
  if (!token_ok(h, wsi))
    return text_status(body, len, HTTP_STATUS_UNAUTHORIZED,
                       "a token is needed (steerd token --role observer)\n");
  if (answer)
    return answer(h, wsi, body, len);
  *body = steerd_http_map_json(h, NULL, 0, len);
  return *body ? HTTP_STATUS_OK : HTTP_STATUS_INTERNAL_SERVER_ERROR;
}
