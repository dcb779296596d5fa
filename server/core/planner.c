/* planner.c: GOTO requests, the plan queue and replanning (see planner.h). */
#include "planner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bytes.h"
#include "navmesh.h"

typedef struct goto_rec {
  steer_id id; /* 0: slot not in GOTO */
  steer_goto g;
  uint8_t status;  /* steer_goto_status */
  uint8_t queued;  /* in the ring */
  uint8_t reason;  /* of the queued request */
  uint8_t partial; /* the followed route is the first part of a longer one */
  int32_t path;    /* the world path handle set by the last plan */
  uint32_t map_version;
  vec2 goal; /* m, where the route ends */
} goto_rec;

/* The plan of the queue's head while it spans ticks (see steer_planner). */
typedef struct plan_act {
  uint8_t on;       /* a plan is in progress for the queue's head */
  uint8_t cls;      /* its radius class (an agent whose radius changed begins again) */
  uint32_t slot;    /* its agent's slot (not saved: the head of the saved queue) */
  uint8_t running;  /* its search is in the mesh (not after a restore) */
  uint8_t lead;     /* the route starts at lead_pt (the start was moved to fit) */
  uint8_t lm;       /* it plans with the class's landmarks */
  uint32_t spent;   /* expansions so far */
  uint32_t version; /* of the map it plans on */
  uint64_t tick;    /* when it began */
  vec2 from, goal, mesh_goal, lead_pt;
  uint64_t ns; /* CPU time so far, for the plan time histogram */
} plan_act;

struct steer_planner {
  steer_planner_config cfg;
  uint32_t cap;
  goto_rec *rec;  /* by slot index */
  uint32_t *ring; /* FIFO of slot indices */
  uint32_t head, count;
  steer_plan_event *events;
  uint32_t nevents;
  steer_nav_cache *navs;
  /* Radius classes whose plans are served (bit k: class k), and for those
   * waiting for their graph the tick from which they are (0: none). Part of
   * the saved state: when a class becomes servable is a function of the
   * calls, never of how long its build takes or whether a graph was warmed. */
  uint8_t ready;
  uint64_t due[STEER_NAV_CLASSES];
  /* Mesh classes after a map change: rebuilt off the thread from the map of
   * that tick, their requests waiting until the rebuild is due (a mesh is
   * rebuilt whole: too long for a tick on big levels). Saved too: what is
   * served when depends on the map's versions and the ticks alone. */
  uint32_t due_version[STEER_NAV_CLASSES];     /* map version when the first build started */
  uint32_t served_version[STEER_NAV_CLASSES];  /* map version the served mesh is of */
  uint64_t rebuild_due[STEER_NAV_CLASSES];     /* 0: none */
  uint32_t rebuild_version[STEER_NAV_CLASSES]; /* map version the rebuild is of */
  uint8_t versions_unknown;                    /* loaded from a state before version 3 */
  /* Mesh classes' landmarks (navmesh.h), computed off the thread once a mesh
   * is served and used from their due tick on (waited for then, if still
   * running), by the plans begun from then on; saved too, so a restored
   * planner's plans use them exactly when the saved one's did. */
  uint8_t lm_on;                      /* bit k: class k's plans begin with landmarks */
  uint64_t lm_due[STEER_NAV_CLASSES]; /* 0: none due */
  uint8_t lm_unknown;                 /* loaded from a state before version 4 */
  uint8_t restoring;                  /* steer_planner_restoring: warming builds, never makes ready */
  uint8_t warming;                    /* classes whose steer_planner_warm_start build may still run */
  uint64_t tick_builds;               /* full graph builds made by a plan, in a tick */
  steer_planner_wait_fn wait_fn;      /* the host's, between the slices of a wait */
  void *wait_ctx;
  vec2 *route; /* route_cap points: a plan's, grown to the longest route yet */
  uint32_t route_cap;
  /* The plan of the queue's head while it spans ticks (on a mesh, sliced: the
   * search keeps its state in the class's mesh between ticks). Its inputs are
   * saved with the state, so a restored planner begins it again and runs the
   * expansions already spent before it goes on: the same search, the same
   * ticks. */
  plan_act act;
  steer_planner_stats stats;
};

const double steer_planner_time_bounds[STEER_PLANNER_TIME_BUCKETS] = {
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1};

/* The monotonic clock (ns), for the statistics only: no plan reads it. */
static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

steer_goto steer_default_goto(void) {
  steer_goto g;
  memset(&g, 0, sizeof g);
  g.target.kind = STEER_TARGET_POINT;
  g.node_radius = 0.5f;
  g.cornering = STEER_CORNER_NONE;
  g.replan_distance = 2.0f;
  return g;
}

steer_planner_config steer_default_planner_config(void) {
  steer_planner_config c = {0u, 0u, STEER_NAV_MESH};
  return c;
}

steer_planner *steer_planner_create(const steer_world *w, const steer_planner_config *cfg) {
  if (!w || !cfg || cfg->nav >= STEER_NAV_KIND_COUNT)
    return NULL;
  steer_planner *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  const steer_world_config *wc = steer_world_get_config(w);
  p->cfg = *cfg;
  if (!p->cfg.budget) /* by what the classes plan on */
    p->cfg.budget = cfg->nav == STEER_NAV_GRAPH ? STEER_PLANNER_GRAPH_BUDGET : STEER_PLANNER_MESH_BUDGET;
  p->cap = steer_world_capacity(w);
  p->rec = calloc(p->cap, sizeof *p->rec);
  p->ring = calloc(p->cap, sizeof *p->ring);
  p->events = calloc(p->cap, sizeof *p->events);
  p->route_cap = STEER_PLANNER_MAX_ROUTE + 3u;
  p->route = calloc(p->route_cap, sizeof *p->route);
  p->navs = steer_nav_cache_create(wc->min, wc->max);
  if (p->navs)
    steer_nav_cache_set_kind(p->navs, cfg->nav);
  if (!p->rec || !p->ring || !p->events || !p->route || !p->navs) {
    steer_planner_destroy(p);
    return NULL;
  }
  return p;
}

void steer_planner_destroy(steer_planner *p) {
  if (!p)
    return;
  free(p->rec);
  free(p->ring);
  free(p->events);
  free(p->route);
  steer_nav_cache_destroy(p->navs);
  free(p);
}

/* ---- warming the graphs up --------------------------------------------------- */

/* The radius class index of r, or STEER_NAV_CLASSES (none). */
static uint32_t class_index(float r) {
  if (!isfinite(r) || r < 0.0f)
    return STEER_NAV_CLASSES;
  float k = steer_nav_class_radius(r) / STEER_NAV_CLASS;
  return k < (float)STEER_NAV_CLASSES - 0.5f ? (uint32_t)lrintf(k) : STEER_NAV_CLASSES;
}

/* Ticks a mesh class's landmarks take before its plans use them (computed
 * meanwhile off the thread, while its plans go on without): the config's
 * build delay, or by the map's size, at least STEER_PLANNER_LANDMARK_TICKS
 * (plans lose nothing meanwhile, and a loaded machine's computation is then
 * never waited for on small levels). */
static uint64_t landmark_delay(const steer_planner *p, const steer_world *w) {
  if (p->cfg.build_delay)
    return p->cfg.build_delay;
  uint64_t d = 1u + steer_map_segment_count(steer_world_map(w)) / STEER_PLANNER_LANDMARK_SEGMENTS_PER_TICK;
  return d < STEER_PLANNER_LANDMARK_TICKS ? STEER_PLANNER_LANDMARK_TICKS : d;
}

/* Class k's mesh is served from tick on: its landmarks are computed anew. */
static void landmarks_begin(steer_planner *p, const steer_world *w, uint32_t k, uint64_t tick) {
  if (p->cfg.nav != STEER_NAV_MESH)
    return;
  p->lm_on = (uint8_t)(p->lm_on & ~(1u << k));
  p->lm_due[k] = tick + landmark_delay(p, w);
  (void)steer_nav_cache_landmarks_start(p->navs, (float)k * STEER_NAV_CLASS);
}

int steer_planner_warm_radius(steer_planner *p, const steer_world *w, float r) {
  if (!p || !w || !isfinite(r) || r < 0.0f)
    return STEER_EINVAL;
  uint32_t k = class_index(r);
  if (k >= STEER_NAV_CLASSES)
    return 0; /* wider than every class: its GOTOs are unreachable, nothing to build */
  int served = !p->restoring && !p->due[k];
  if (served) {
    p->ready |= (uint8_t)(1u << k);
    p->served_version[k] = steer_map_version(steer_world_map(w)); /* built now, below */
  }
  int rc = 1;
  if (steer_nav_cache_has(p->navs, r) && !steer_nav_cache_pending(p->navs, r))
    rc = 0; /* brought up to date with the map now (a map load: maybe a rebuild) */
  if (!steer_nav_cache_get(p->navs, steer_world_map(w), r))
    return STEER_ENOMEM;
  if (served)
    landmarks_begin(p, w, k, steer_world_tick(w));
  return rc;
}

void steer_planner_restoring(steer_planner *p) { p->restoring = 1; }

uint64_t steer_planner_tick_builds(const steer_planner *p) { return p->tick_builds; }
uint64_t steer_planner_sync_builds(const steer_planner *p) { return steer_nav_cache_sync_builds(p->navs); }

void steer_planner_set_wait_hook(steer_planner *p, steer_planner_wait_fn fn, void *ctx) {
  p->wait_fn = fn;
  p->wait_ctx = ctx;
}

/* Waits for r's class's job (wait: steer_nav_cache_wait for its build,
 * steer_nav_cache_landmarks_wait for its landmarks), if one runs, a slice at a
 * time with the host's hook between slices: the tick stays blocked (what keeps
 * results independent of timing), the host's connections do not. */
static void await_job(steer_planner *p, float r, int (*wait)(steer_nav_cache *, float, uint32_t)) {
  if (wait(p->navs, r, 0))
    return;
  float cr = steer_nav_class_radius(r);
  uint64_t t0 = mono_ns();
  p->stats.waits++;
  while (!wait(p->navs, r, STEER_PLANNER_WAIT_SLICE_MS))
    if (p->wait_fn)
      p->wait_fn(p->wait_ctx, cr, mono_ns() - t0, 0);
  uint64_t waited = mono_ns() - t0;
  p->stats.wait_ns += waited;
  if (p->wait_fn)
    p->wait_fn(p->wait_ctx, cr, waited, 1);
}

static void await_build(steer_planner *p, float r) { await_job(p, r, steer_nav_cache_wait); }

/* A served mesh class's landmarks at the start of a tick: used from their due
 * tick on. A restored planner's cache has none for a class that uses them or
 * is due to: computed anew, and waited for at once when plans use them. */
static void landmarks_settle(steer_planner *p, const steer_world *w, uint32_t k, uint64_t tick) {
  float r = (float)k * STEER_NAV_CLASS;
  if (p->lm_unknown && !p->lm_due[k] && !((p->lm_on >> k) & 1u))
    landmarks_begin(p, w, k, tick); /* a state from before landmarks were saved */
  if (!p->lm_due[k] && !((p->lm_on >> k) & 1u))
    return;
  if (steer_nav_cache_landmarks(p->navs, r) == 0)
    (void)steer_nav_cache_landmarks_start(p->navs, r);
  if (p->lm_due[k] && tick >= p->lm_due[k]) {
    p->lm_on |= (uint8_t)(1u << k);
    p->lm_due[k] = 0;
  }
  if ((p->lm_on >> k) & 1u)
    await_job(p, r, steer_nav_cache_landmarks_wait);
}

/* Ticks a new class's plans wait for its graph (built meanwhile off the tick
 * thread): the config's, or by the map's size. */
static uint64_t build_delay(const steer_planner *p, const steer_world *w) {
  if (p->cfg.build_delay)
    return p->cfg.build_delay;
  uint64_t segs = steer_map_segment_count(steer_world_map(w));
  if (p->cfg.nav == STEER_NAV_MESH)
    return 1u + segs / STEER_PLANNER_MESH_SEGMENTS_PER_TICK;
  return 1u + segs / STEER_PLANNER_SEGMENTS_PER_TICK + segs * segs / STEER_PLANNER_SEGMENT_PAIRS_PER_TICK;
}

/* Whether agent radius r's class is served at tick; if not, the class is
 * given its due tick (the first time) and its graph build is started off the
 * thread. A radius with no class is "ready" (its plans are unreachable). */
static int class_ready(steer_planner *p, const steer_world *w, float r, uint64_t tick) {
  uint32_t k = class_index(r);
  if (k >= STEER_NAV_CLASSES || (p->ready >> k) & 1u)
    return 1;
  if (!p->due[k]) {
    p->due[k] = tick + build_delay(p, w);
    p->due_version[k] = steer_map_version(steer_world_map(w));
    const steer_world_config *wc = steer_world_get_config(w);
    /* A graph of an older map (a restored planner's warm-up) is built anew. */
    (void)steer_nav_cache_refresh(p->navs, steer_world_map(w), r, wc->cell_size); /* else built when due */
  }
  return 0;
}

/* Whether a request of radius r is served at tick: its class is ready and,
 * on meshes, not being rebuilt after a map change. */
static int servable(steer_planner *p, const steer_world *w, float r, uint64_t tick) {
  if (!class_ready(p, w, r, tick))
    return 0;
  uint32_t k = class_index(r);
  return k >= STEER_NAV_CLASSES || p->cfg.nav != STEER_NAV_MESH || !p->rebuild_due[k];
}

/* At the start of a tick: the classes due now become ready (their build is
 * waited for, if still running: the only wait, and what keeps results
 * independent of timing); those still waiting get their build started if it
 * is not under way (after a restore). */
static void settle(steer_planner *p, const steer_world *w, uint64_t tick) {
  const uint32_t version = steer_map_version(steer_world_map(w));
  const steer_world_config *wc = steer_world_get_config(w);
  for (uint32_t k = 0; k < STEER_NAV_CLASSES; k++) {
    float r = (float)k * STEER_NAV_CLASS;
    if (p->versions_unknown && p->due[k])
      p->due_version[k] = version; /* a state from before the versions were saved */
    if (p->due[k]) {
      if (tick >= p->due[k]) {
        await_build(p, r);
        p->ready |= (uint8_t)(1u << k);
        p->due[k] = 0;
        p->served_version[k] = p->due_version[k];
        landmarks_begin(p, w, k, tick);
      } else if (!steer_nav_cache_has(p->navs, r) && !steer_nav_cache_pending(p->navs, r)) {
        (void)steer_nav_cache_start(p->navs, steer_world_map(w), r, wc->cell_size);
      }
    }
    if (p->cfg.nav != STEER_NAV_MESH || !((p->ready >> k) & 1u))
      continue;
    if (p->versions_unknown)
      p->served_version[k] = version;
    /* A served mesh class after a map change: its rebuild, due like a first
     * build; when the map changed again meanwhile, another. */
    if (p->rebuild_due[k] && tick >= p->rebuild_due[k]) {
      await_build(p, r);
      p->served_version[k] = p->rebuild_version[k];
      p->rebuild_due[k] = 0;
      landmarks_begin(p, w, k, tick);
    }
    if (!p->rebuild_due[k] && p->served_version[k] != version) {
      (void)steer_nav_cache_refresh(p->navs, steer_world_map(w), r,
                                    wc->cell_size); /* else rebuilt when served */
      p->rebuild_version[k] = version;
      p->rebuild_due[k] = tick + build_delay(p, w);
    }
    /* A restored planner's cache may lag its state (a warm-up build of the map
     * before a change, or none for a class no agent has now): brought to the
     * map off the thread and waited for with the hook, never rebuilt inside
     * a plan. Only the cache differs: what is served when does not. */
    if (!p->rebuild_due[k] &&
        (!steer_nav_cache_has(p->navs, r) || steer_nav_cache_version(p->navs, r) != version)) {
      if (steer_nav_cache_refresh(p->navs, steer_world_map(w), r, wc->cell_size) >= 0 &&
          steer_nav_cache_version(p->navs, r) != version)
        await_build(p, r);
    }
    if (!p->rebuild_due[k])
      landmarks_settle(p, w, k, tick);
  }
  p->versions_unknown = 0;
  p->lm_unknown = 0;
}

int steer_planner_warm(steer_planner *p, const steer_world *w) {
  if (!p || !w)
    return STEER_EINVAL;
  int built = 0;
  steer_world_view v = steer_world_get_view(w);
  for (uint32_t i = 0; i < v.count; i++) {
    steer_agent_info info;
    if (steer_world_get(w, v.id[i], &info) != 0)
      continue;
    int rc = steer_planner_warm_radius(p, w, info.limits.radius);
    if (rc < 0)
      return rc;
    built += rc;
  }
  return built;
}

int steer_planner_warm_start(steer_planner *p, const steer_world *w) {
  if (!p || !w)
    return STEER_EINVAL;
  const steer_world_config *wc = steer_world_get_config(w);
  int started = 0, failed = 0;
  steer_world_view v = steer_world_get_view(w);
  for (uint32_t i = 0; i < v.count; i++) {
    steer_agent_info info;
    if (steer_world_get(w, v.id[i], &info) != 0)
      continue;
    float r = info.limits.radius;
    uint32_t k = class_index(r);
    if (k >= STEER_NAV_CLASSES)
      continue; /* wider than every class: nothing to build */
    if (!p->restoring && !((p->ready >> k) & 1u) && !p->due[k]) {
      /* The start-up's classes build together while the first ticks run: at
       * least STEER_PLANNER_WARM_TICKS, so that a loaded machine's (or an
       * unoptimised build's) builds do not hold the first ticks' snapshots. */
      uint64_t d = build_delay(p, w);
      if (!p->cfg.build_delay && d < STEER_PLANNER_WARM_TICKS)
        d = STEER_PLANNER_WARM_TICKS;
      p->due[k] = steer_world_tick(w) + d;
      p->due_version[k] = steer_map_version(steer_world_map(w));
    }
    int rc = steer_nav_cache_start(p->navs, steer_world_map(w), r, wc->cell_size);
    if (rc < 0)
      failed = rc; /* built by the class's first plan, on the caller's thread */
    started += rc == 1;
    if (steer_nav_cache_pending(p->navs, r)) /* started now, or by a GOTO before */
      p->warming |= (uint8_t)(1u << k);
  }
  return failed ? failed : started;
}

uint32_t steer_planner_warming(steer_planner *p) {
  uint32_t n = 0;
  for (uint32_t k = 0; k < STEER_NAV_CLASSES; k++) {
    if (!((p->warming >> k) & 1u))
      continue;
    if (steer_nav_cache_wait(p->navs, (float)k * STEER_NAV_CLASS, 0))
      p->warming = (uint8_t)(p->warming & ~(1u << k));
    else
      n++;
  }
  return n;
}

uint64_t steer_planner_graph_builds(const steer_planner *p) { return steer_nav_cache_builds(p->navs); }

static goto_rec *rec_of(steer_planner *p, steer_id id) {
  uint32_t s = id & STEER_ID_INDEX_MASK;
  return s < p->cap ? &p->rec[s] : NULL;
}

static void enqueue(steer_planner *p, goto_rec *r, uint8_t reason) {
  r->reason = reason;
  if (r->queued)
    return;
  r->queued = 1;
  p->ring[(p->head + p->count) % p->cap] = (uint32_t)(r - p->rec);
  p->count++;
}

int steer_planner_check(const steer_world *w, steer_id id, const steer_goto *g) {
  steer_agent_info info;
  if (steer_world_get(w, id, &info) != 0)
    return STEER_ENOENT;
  if (!g || !(g->node_radius > 0.0f && g->node_radius <= STEER_MAX_DISTANCE) ||
      !(g->replan_distance >= 0.0f && g->replan_distance <= STEER_MAX_DISTANCE) ||
      g->cornering >= STEER_CORNER_COUNT)
    return STEER_EINVAL;
  if (info.model == STEER_MODEL_DYNAMIC || info.model == STEER_MODEL_KINEMATIC) {
    if (g->cornering != STEER_CORNER_NONE)
      return STEER_EMODEL;
  } else if (info.model != STEER_MODEL_HEADING) {
    return STEER_EMODEL;
  }
  const steer_map *m = steer_world_map(w);
  if (g->target.kind == STEER_TARGET_POINT) {
    const steer_world_config *wc = steer_world_get_config(w);
    vec2 t = g->target.point;
    if (!isfinite(t.x) || !isfinite(t.y) || t.x < wc->min.x || t.x > wc->max.x || t.y < wc->min.y ||
        t.y > wc->max.y)
      return STEER_EINVAL;
    if (steer_map_count(m) > 0 && steer_map_inside(m, t))
      return STEER_EBLOCKED;
  } else if (g->target.kind == STEER_TARGET_AGENT) {
    if (g->target.agent == id || !steer_world_alive(w, g->target.agent))
      return STEER_ETARGET;
  } else {
    return STEER_EINVAL;
  }
  return STEER_OK;
}

int steer_planner_goto(steer_planner *p, const steer_world *w, steer_id id, const steer_goto *g) {
  int rc = steer_planner_check(w, id, g);
  if (rc != STEER_OK)
    return rc;
  goto_rec *r = rec_of(p, id);
  if (r->id != id) { /* a new agent in this slot: forget the old one's state */
    uint8_t queued = r->queued;
    memset(r, 0, sizeof *r);
    r->queued = queued;
    r->path = -1;
  }
  if (p->act.on && p->count && &p->rec[p->ring[p->head]] == r)
    p->act.on = 0; /* its plan in progress was for the old request */
  r->id = id;
  r->g = *g;
  /* Only what the kind uses is kept (the saved state is canonical). */
  steer_target t = {g->target.kind, v2(0.0f, 0.0f), 0.0f, 0, 0};
  if (g->target.kind == STEER_TARGET_POINT)
    t.point = g->target.point;
  else
    t.agent = g->target.agent;
  r->g.target = t;
  if (r->status != STEER_GOTO_FOLLOWING)
    r->status = STEER_GOTO_QUEUED;
  enqueue(p, r, STEER_PLAN_NEW);
  /* A class without a graph: its build starts now, at the command. */
  steer_agent_info info;
  if (steer_world_get(w, id, &info) == 0)
    (void)class_ready(p, w, info.limits.radius, steer_world_tick(w));
  return 0;
}

int steer_planner_cancel(steer_planner *p, steer_id id) {
  goto_rec *r = rec_of(p, id);
  if (!r || r->id != id || r->status == STEER_GOTO_NONE)
    return STEER_ENOENT;
  r->id = 0;
  r->status = STEER_GOTO_NONE; /* a queued entry is skipped when served */
  if (p->act.on && p->count && &p->rec[p->ring[p->head]] == r)
    p->act.on = 0;
  return 0;
}

steer_goto_status steer_planner_status(const steer_planner *p, steer_id id, vec2 *goal) {
  uint32_t s = id & STEER_ID_INDEX_MASK;
  if (s >= p->cap || p->rec[s].id != id)
    return STEER_GOTO_NONE;
  if (goal)
    *goal = p->rec[s].goal;
  return (steer_goto_status)p->rec[s].status;
}

const steer_plan_event *steer_planner_events(const steer_planner *p, uint32_t *count) {
  *count = p->nevents;
  return p->events;
}

steer_planner_stats steer_planner_get_stats(const steer_planner *p) {
  steer_planner_stats s = p->stats;
  s.queued = p->count;
  s.landmark_classes = 0;
  for (uint32_t k = 0; k < STEER_NAV_CLASSES; k++)
    s.landmark_classes += (p->lm_on >> k) & 1u;
  return s;
}

static void emit(steer_planner *p, const steer_world *w, steer_id id, uint8_t type, uint8_t reason,
                 uint32_t points, float length) {
  if (type == STEER_PLAN_PLANNED)
    p->stats.planned++;
  else if (type == STEER_PLAN_REPLANNED)
    p->stats.replanned++;
  if (p->nevents >= p->cap)
    return; /* cannot happen: an agent is served at most once per update */
  p->events[p->nevents++] = (steer_plan_event){steer_world_tick(w), id, type, reason, points, length};
}

/* ---- triggers ------------------------------------------------------------------ */

/* Whether the body still fits along what is left of its route. */
static int route_clear(const steer_world *w, const steer_agent_info *info) {
  steer_path path;
  if (steer_world_path_get(w, info->path, &path) != 0)
    return 0;
  const steer_map *m = steer_world_map(w);
  float r = info->limits.radius;
  vec2 a = info->state.position;
  for (uint32_t i = info->cursor.node; i < path.count; i++) {
    if (!steer_nav_clear(m, a, path.points[i], r))
      return 0;
    a = path.points[i];
  }
  return 1;
}

/* The map check of one following agent: a route the change left clear is kept. */
static int map_check(steer_planner *p, const steer_world *w, goto_rec *r, const steer_agent_info *info,
                     uint32_t version) {
  if (r->map_version == version)
    return 0;
  r->map_version = version;
  if (route_clear(w, info))
    return 0;
  enqueue(p, r, STEER_PLAN_MAP);
  return 1;
}

void steer_planner_map_changed(steer_planner *p, const steer_world *w) {
  uint32_t version = steer_map_version(steer_world_map(w));
  for (uint32_t s = 0; s < p->cap; s++) {
    goto_rec *r = &p->rec[s];
    steer_agent_info info;
    if (r->id == 0 || r->status != STEER_GOTO_FOLLOWING || r->queued ||
        steer_world_get(w, r->id, &info) != 0 || info.path != r->path ||
        info.behaviour.kind != STEER_BEHAVIOUR_FOLLOW_PATH)
      continue; /* check_triggers deals with those */
    map_check(p, w, r, &info, version);
  }
}

/* Drops agents that left GOTO, queues replans for map changes and moved
 * targets, in slot order. */
static void check_triggers(steer_planner *p, const steer_world *w) {
  uint32_t version = steer_map_version(steer_world_map(w));
  for (uint32_t s = 0; s < p->cap; s++) {
    goto_rec *r = &p->rec[s];
    if (r->id == 0 || r->status != STEER_GOTO_FOLLOWING)
      continue;
    steer_agent_info info;
    if (steer_world_get(w, r->id, &info) != 0 || info.path != r->path ||
        info.behaviour.kind != STEER_BEHAVIOUR_FOLLOW_PATH) {
      r->id = 0; /* despawned, or told to do something else */
      r->status = STEER_GOTO_NONE;
      continue;
    }
    if (r->queued)
      continue;
    if (map_check(p, w, r, &info, version))
      continue;
    if (r->g.target.kind == STEER_TARGET_AGENT) {
      steer_agent_info t;
      if (steer_world_get(w, r->g.target.agent, &t) != 0 ||
          v2_len(v2_sub(t.state.position, r->goal)) > r->g.replan_distance)
        enqueue(p, r, STEER_PLAN_TARGET_MOVED);
    }
  }
}

void steer_planner_observe(steer_planner *p, const steer_world *w) {
  uint32_t n;
  const steer_event *ev = steer_world_events(w, &n);
  for (uint32_t i = 0; i < n; i++) {
    goto_rec *r = rec_of(p, ev[i].agent);
    if (!r || r->id != ev[i].agent || r->status != STEER_GOTO_FOLLOWING)
      continue;
    if (ev[i].type == STEER_EVENT_STUCK)
      enqueue(p, r, STEER_PLAN_STUCK);
    else if (ev[i].type == STEER_EVENT_PATH_FINISHED && r->partial)
      enqueue(p, r, STEER_PLAN_CONTINUE);
  }
}

/* ---- serving ------------------------------------------------------------------- */

static void unreachable(steer_planner *p, steer_world *w, goto_rec *r) {
  steer_world_stop(w, r->id);
  r->status = STEER_GOTO_UNREACHABLE;
  r->partial = 0;
  r->path = -1;
  p->stats.unreachable++;
  emit(p, w, r->id, STEER_PLAN_UNREACHABLE, r->reason, 0, 0.0f);
}

/* Room for n route points (a maze's routes have thousands of corners: they
 * are followed in parts of max_path_points, see planner.h). */
static int route_room(steer_planner *p, uint32_t n) {
  if (n <= p->route_cap)
    return 1;
  vec2 *r = realloc(p->route, (size_t)n * sizeof *r);
  if (!r)
    return 0;
  p->route = r;
  p->route_cap = n;
  return 1;
}

/* 1 when p->route[0..n) is the rest of the path r's agent follows, from
 * the node it heads for: a replan that found the same way (the door that
 * changed is elsewhere, the stuck agent has no better route). */
static int same_route(const steer_planner *p, const steer_world *w, const goto_rec *r, uint32_t n) {
  steer_agent_info now;
  steer_path path;
  if (r->status != STEER_GOTO_FOLLOWING || steer_world_get(w, r->id, &now) != 0 || now.path != r->path ||
      steer_world_path_get(w, now.path, &path) != 0 || now.cursor.node + n != path.count)
    return 0;
  for (uint32_t i = 0; i < n; i++) {
    vec2 d = v2_sub(p->route[i], path.points[now.cursor.node + i]);
    if (fabsf(d.x) > STEER_PLANNER_SAME_M || fabsf(d.y) > STEER_PLANNER_SAME_M)
      return 0;
  }
  return 1;
}

/* The route found for r (its points in p->route, total of them): set as the
 * agent's path, answered with PLANNED or REPLANNED; the route it already
 * follows is kept as it is, without an event. */
static void route_found(steer_planner *p, steer_world *w, goto_rec *r, uint32_t total, float length,
                        vec2 goal) {
  const steer_world_config *wc = steer_world_get_config(w);
  uint32_t n = total < wc->max_path_points ? total : wc->max_path_points;
  if (same_route(p, w, r, n) && (n < total) == r->partial) {
    r->goal = goal;
    r->map_version = steer_map_version(steer_world_map(w));
    p->stats.kept++;
    return;
  }
  if (steer_world_set_path(w, r->id, p->route, n, r->g.node_radius, STEER_PATH_ONCE, r->g.cornering) != 0) {
    unreachable(p, w, r);
    return;
  }
  steer_agent_info now;
  steer_world_get(w, r->id, &now);
  uint8_t type = r->status == STEER_GOTO_FOLLOWING ? STEER_PLAN_REPLANNED : STEER_PLAN_PLANNED;
  r->status = STEER_GOTO_FOLLOWING;
  r->path = now.path;
  r->partial = n < total;
  r->goal = goal;
  r->map_version = steer_map_version(steer_world_map(w));
  emit(p, w, r->id, type, r->reason, n, length);
}

/* The goal and start of r's plan for class radius cr: 0, or -1 (unreachable:
 * the target agent is gone, or no point fits near the goal or the start). */
static int plan_ends(steer_planner *p, const steer_world *w, const goto_rec *r, const steer_agent_info *info,
                     float cr) {
  const steer_map *m = steer_world_map(w);
  const steer_world_config *wc = steer_world_get_config(w);
  vec2 goal;
  if (r->g.target.kind == STEER_TARGET_AGENT) {
    steer_agent_info t;
    if (steer_world_get(w, r->g.target.agent, &t) != 0)
      return -1;
    goal = t.state.position;
  } else {
    goal = r->g.target.point;
  }
  if (steer_map_count(m) > 0 && !steer_map_free(m, goal, cr, 0.0f) &&
      steer_map_nearest_free(m, goal, cr, STEER_PLANNER_SNAP, wc->min, wc->max, &goal) != 0)
    return -1;
  /* The start: the agent's position, or the nearest point a body of the class
   * radius fits (an agent hugging a wall), reached first. */
  p->act.from = info->state.position;
  p->act.lead = 0;
  if (steer_map_count(m) > 0 && !steer_map_free(m, p->act.from, cr, 0.0f)) {
    vec2 f;
    if (steer_map_nearest_free(m, p->act.from, cr, STEER_PLANNER_SNAP, wc->min, wc->max, &f) != 0)
      return -1;
    p->act.lead_pt = f;
    p->act.from = f;
    p->act.lead = 1;
  }
  p->act.goal = goal;
  return 0;
}

/* Plans for the queue's head r within left expansions: on a mesh in slices
 * (*pending set when the plan goes on in the next tick), on a visibility graph
 * whole. Returns the expansions spent (at least 1). */
static uint32_t serve(steer_planner *p, steer_world *w, goto_rec *r, uint32_t left, int *pending) {
  *pending = 0;
  steer_agent_info info;
  const uint32_t slot = (uint32_t)(r - p->rec);
  if (steer_world_get(w, r->id, &info) != 0) {
    r->id = 0;
    r->status = STEER_GOTO_NONE;
    p->act.on = 0;
    return 1;
  }
  const uint32_t cls = class_index(info.limits.radius);
  if (p->act.on && (p->act.slot != slot || p->act.cls != cls))
    p->act.on = 0; /* another request's, or of another radius class: begun again */
  const steer_map *m = steer_world_map(w);
  uint64_t sync = steer_nav_cache_sync_builds(p->navs);
  steer_nav *nav = steer_nav_cache_get(p->navs, m, info.limits.radius);
  p->tick_builds += steer_nav_cache_sync_builds(p->navs) - sync;
  if (!nav) { /* a body wider than the largest radius class, or no memory */
    p->stats.plans++;
    p->act.on = 0;
    unreachable(p, w, r);
    return 1;
  }
  float cr = steer_nav_radius(nav);
  steer_mesh *mesh = steer_nav_mesh(nav);
  if (p->act.on && (!mesh || p->act.version != steer_nav_map_version(nav)))
    p->act.on = 0; /* the map changed under the plan: it begins again */
  uint32_t spent = 0;
  if (!p->act.on) {
    p->stats.plans++;
    p->act.ns = 0;
    p->act.spent = 0;
    p->act.tick = steer_world_tick(w);
    if (plan_ends(p, w, r, &info, cr) != 0) {
      unreachable(p, w, r);
      return 1;
    }
    if (!mesh) { /* a visibility graph: the whole plan now */
      vec2 *out = p->route + p->act.lead;
      if (p->act.lead)
        p->route[0] = p->act.lead_pt;
      steer_nav_result res;
      int rc = steer_nav_plan(nav, m, p->act.from, p->act.goal, out, p->route_cap - 2u, &res);
      /* A long route: planned again with room for twice as many points (the
       * graph does not say how many it needs). */
      while (rc == STEER_EFULL && p->route_cap < STEER_PLANNER_ROUTE_LIMIT &&
             route_room(p, 2u * p->route_cap)) {
        out = p->route + p->act.lead;
        if (p->act.lead)
          p->route[0] = p->act.lead_pt;
        rc = steer_nav_plan(nav, m, p->act.from, p->act.goal, out, p->route_cap - 2u, &res);
      }
      if (rc != 0) {
        unreachable(p, w, r);
        return res.expanded + 1u;
      }
      float length = res.length + (p->act.lead ? v2_len(v2_sub(p->act.lead_pt, info.state.position)) : 0.0f);
      route_found(p, w, r, res.count + p->act.lead, length, p->act.goal);
      return res.expanded + 1u;
    }
    if (steer_nav_mesh_goal(nav, m, p->act.goal, &p->act.mesh_goal) != 0) {
      unreachable(p, w, r);
      return 1;
    }
    p->act.version = steer_nav_map_version(nav);
    p->act.lm = (uint8_t)((p->lm_on >> cls) & 1u);
    p->act.on = 1;
    p->act.running = 0;
    p->act.slot = slot;
    p->act.cls = (uint8_t)cls;
  }
  if (!p->act.running) { /* begun now, or again after a restore: the expansions already spent first */
    int rc = steer_mesh_plan_begin(mesh, p->act.from, p->act.mesh_goal, p->act.lm);
    if (rc != 0) {
      p->act.on = 0;
      unreachable(p, w, r);
      return 1;
    }
    steer_mesh_plan_run(mesh, p->act.spent, NULL);
    p->act.running = 1;
  }
  int done = steer_mesh_plan_run(mesh, left, &spent);
  p->act.spent += spent;
  spent += 1u; /* the plan's set-up counts */
  if (!done) {
    *pending = 1;
    return spent;
  }
  p->act.on = 0;
  uint32_t lead = p->act.lead;
  int extra = p->act.mesh_goal.x != p->act.goal.x || p->act.mesh_goal.y != p->act.goal.y;
  if (lead)
    p->route[0] = p->act.lead_pt;
  steer_nav_result res;
  int rc = steer_mesh_plan_result(mesh, p->route + lead, p->route_cap - 2u, &res);
  if (rc == STEER_EFULL && route_room(p, res.count + 3u)) { /* a long route: all of it */
    if (lead)
      p->route[0] = p->act.lead_pt;
    rc = steer_mesh_plan_result(mesh, p->route + lead, p->route_cap - 2u, &res);
  }
  if (rc != 0) {
    unreachable(p, w, r);
    return spent;
  }
  uint32_t total = res.count + lead;
  if (extra) {
    p->route[total++] = p->act.goal;
    res.length += v2_len(v2_sub(p->act.goal, p->act.mesh_goal));
  }
  /* A plan begun in an earlier tick starts where the agent was then: if the
   * way from where it is now to the route's first point is not clear, the
   * route goes back to that start first. */
  if (!lead && p->act.tick != steer_world_tick(w) && route_room(p, total + 1u) &&
      !steer_nav_clear(m, info.state.position, p->route[0], cr)) {
    memmove(p->route + 1, p->route, total * sizeof *p->route);
    p->route[0] = p->act.from;
    total++;
    res.length += v2_len(v2_sub(p->act.from, info.state.position));
  }
  float length = res.length + (lead ? v2_len(v2_sub(p->act.lead_pt, info.state.position)) : 0.0f);
  route_found(p, w, r, total, length, p->act.goal);
  return spent;
}

static void count_plan_time(steer_planner *p, uint64_t ns) {
  p->stats.plan_ns += ns;
  for (uint32_t b = 0; b < STEER_PLANNER_TIME_BUCKETS; b++)
    if ((double)ns <= steer_planner_time_bounds[b] * 1e9) {
      p->stats.plan_time_bucket[b]++;
      break;
    }
}

void steer_planner_update(steer_planner *p, steer_world *w) {
  p->nevents = 0;
  p->stats.last_served = 0;
  p->stats.last_expanded = 0;
  check_triggers(p, w);
  const uint64_t tick = steer_world_tick(w);
  settle(p, w, tick);
  uint32_t spent = 0;
  /* Each request is looked at once per tick at most: one whose class is not
   * ready goes back to the end of the queue (in order, so deterministically).
   * The head is taken off the queue once its plan is over, so a plan that goes
   * on in the next tick stays first (QUERY: position 0; saved with the queue). */
  for (uint32_t pops = p->count; pops > 0 && p->count > 0 && spent < p->cfg.budget; pops--) {
    goto_rec *r = &p->rec[p->ring[p->head]];
    if (r->id == 0 || r->status == STEER_GOTO_NONE) {
      p->head = (p->head + 1) % p->cap; /* cancelled while queued */
      p->count--;
      r->queued = 0;
      p->act.on = 0;
      continue;
    }
    steer_agent_info info;
    if (steer_world_get(w, r->id, &info) == 0) {
      if (!servable(p, w, info.limits.radius, tick)) {
        p->act.on = 0; /* a plan in progress whose mesh is being rebuilt: begun again when served */
        p->head = (p->head + 1) % p->cap;
        p->count--;
        r->queued = 0;
        enqueue(p, r, r->reason);
        continue;
      }
      /* A served class whose graph is still being built (a restored planner
       * whose warm-up build runs): waited for here, outside the plan's time. */
      await_build(p, info.limits.radius);
    }
    uint64_t plans = p->stats.plans, t0 = mono_ns();
    int pending;
    spent += serve(p, w, r, p->cfg.budget - (spent < p->cfg.budget ? spent : p->cfg.budget), &pending);
    p->act.ns += mono_ns() - t0;
    if (pending)
      break; /* the budget is spent: the plan goes on in the next tick */
    p->head = (p->head + 1) % p->cap;
    p->count--;
    r->queued = 0;
    p->stats.last_served++;
    if (p->stats.plans != plans || p->act.ns)
      count_plan_time(p, p->act.ns);
    p->act.ns = 0;
  }
  p->stats.last_expanded = spent;
}

int steer_planner_get(const steer_planner *p, steer_id id, steer_goto_info *out) {
  uint32_t s = id & STEER_ID_INDEX_MASK;
  if (id == 0 || s >= p->cap || p->rec[s].id != id || p->rec[s].status == STEER_GOTO_NONE)
    return STEER_ENOENT;
  const goto_rec *r = &p->rec[s];
  out->status = r->status;
  out->queued = r->queued;
  out->reason = r->reason;
  out->partial = r->partial;
  out->g = r->g;
  out->goal = r->goal;
  out->path = r->path;
  return STEER_OK;
}

int steer_planner_queue_position(const steer_planner *p, steer_id id, uint32_t *pos) {
  uint32_t s = id & STEER_ID_INDEX_MASK;
  if (id == 0 || s >= p->cap || p->rec[s].id != id || !p->rec[s].queued)
    return STEER_ENOENT;
  uint32_t ahead = 0;
  for (uint32_t i = 0; i < p->count; i++) {
    uint32_t q = p->ring[(p->head + i) % p->cap];
    if (q == s) {
      *pos = ahead;
      return STEER_OK;
    }
    ahead += p->rec[q].id != 0 && p->rec[q].status != STEER_GOTO_NONE; /* a cancelled entry is skipped */
  }
  return STEER_ENOENT;
}

/* ---- saving and loading (planner.h) --------------------------------------------- */

#define STATE_MAGIC     "STPL"
#define STATE_HEAD      16u /* magic, version, capacity, records */
#define STATE_RECORD    45u
#define STATE_CLASSES   (1u + 8u * STEER_NAV_CLASSES) /* u8 ready, u64 due per class (version 2 on) */
#define STATE_ACT       51u /* the head's plan in progress, after its u8 flag (version 3 on: 50) */
#define STATE_LANDMARKS (1u + 8u * STEER_NAV_CLASSES) /* u64 due per class, u8 on (version 4 on) */
#define STATE_REBUILD   (20u * STEER_NAV_CLASSES)     /* mesh rebuilds per class (version 3 on) */

static uint32_t record_count(const steer_planner *p) {
  uint32_t n = 0;
  for (uint32_t s = 0; s < p->cap; s++)
    n += p->rec[s].id != 0 && p->rec[s].status != STEER_GOTO_NONE;
  return n;
}

/* The whole state, without the trailing checksum. */
static void put_state(const steer_planner *p, steer_wbuf *k) {
  steer_put_bytes(k, STATE_MAGIC, 4);
  steer_put_u32(k, STEER_PLANNER_STATE_VERSION);
  steer_put_u32(k, p->cap);
  steer_put_u32(k, record_count(p));
  for (uint32_t s = 0; s < p->cap; s++) {
    const goto_rec *r = &p->rec[s];
    if (r->id == 0 || r->status == STEER_GOTO_NONE)
      continue;
    steer_put_u32(k, r->id);
    steer_put_u8(k, r->status);
    steer_put_u8(k, r->reason);
    steer_put_u8(k, r->partial);
    steer_put_u8(k, r->g.target.kind);
    steer_put_f32(k, r->g.target.point.x);
    steer_put_f32(k, r->g.target.point.y);
    steer_put_u32(k, r->g.target.agent);
    steer_put_f32(k, r->g.node_radius);
    steer_put_u8(k, r->g.cornering);
    steer_put_f32(k, r->g.replan_distance);
    steer_put_u32(k, (uint32_t)r->path);
    steer_put_u32(k, r->map_version);
    steer_put_f32(k, r->goal.x);
    steer_put_f32(k, r->goal.y);
  }
  steer_put_u32(k, p->count);
  for (uint32_t i = 0; i < p->count; i++)
    steer_put_u32(k, p->ring[(p->head + i) % p->cap]);
  steer_put_u8(k, p->ready);
  for (uint32_t c = 0; c < STEER_NAV_CLASSES; c++)
    steer_put_u64(k, p->due[c]);
  for (uint32_t c = 0; c < STEER_NAV_CLASSES; c++) {
    steer_put_u32(k, p->due_version[c]);
    steer_put_u32(k, p->served_version[c]);
    steer_put_u64(k, p->rebuild_due[c]);
    steer_put_u32(k, p->rebuild_version[c]);
  }
  for (uint32_t c = 0; c < STEER_NAV_CLASSES; c++)
    steer_put_u64(k, p->lm_due[c]);
  steer_put_u8(k, p->lm_on);
  steer_put_u8(k, p->act.on);
  if (!p->act.on)
    return;
  const vec2 pts[4] = {p->act.from, p->act.goal, p->act.mesh_goal, p->act.lead_pt};
  for (int i = 0; i < 4; i++) {
    steer_put_f32(k, pts[i].x);
    steer_put_f32(k, pts[i].y);
  }
  steer_put_u8(k, p->act.lead);
  steer_put_u8(k, p->act.cls);
  steer_put_u32(k, p->act.spent);
  steer_put_u32(k, p->act.version);
  steer_put_u64(k, p->act.tick);
  steer_put_u8(k, p->act.lm);
}

uint32_t steer_planner_active(const steer_planner *p) { return record_count(p); }

int steer_planner_idle(const steer_planner *p) {
  if (record_count(p) != 0 || p->count != 0 || p->ready != 0)
    return 0;
  for (uint32_t k = 0; k < STEER_NAV_CLASSES; k++)
    if (p->due[k] || p->rebuild_due[k] || p->lm_due[k])
      return 0;
  return 1;
}

size_t steer_planner_state_size(const steer_planner *p) {
  return STATE_HEAD + (size_t)record_count(p) * STATE_RECORD + 4u + (size_t)p->count * 4u + STATE_CLASSES +
         STATE_REBUILD + STATE_LANDMARKS + 1u + (p->act.on ? STATE_ACT : 0u) + 8u;
}

int steer_planner_save(const steer_planner *p, uint8_t *buf, size_t cap, size_t *len) {
  size_t need = steer_planner_state_size(p);
  if (len)
    *len = need;
  if (!buf || cap < need)
    return STEER_EINVAL;
  steer_wbuf k = steer_wbuf_make(buf, cap);
  k.hashing = 1;
  put_state(p, &k);
  steer_put_u64(&k, k.h);
  return !k.overflowed && k.pos == need ? STEER_OK : STEER_EINVAL;
}

uint64_t steer_planner_hash(const steer_planner *p) {
  steer_wbuf k = steer_wbuf_make(NULL, 0);
  k.hashing = 1;
  put_state(p, &k);
  return k.h;
}

static int finite2(vec2 v) { return isfinite(v.x) && isfinite(v.y); }

/* What version 3 adds at the end of the state: the mesh rebuilds per class
 * and the head's plan in progress; version 4, the landmarks. */
typedef struct state_tail {
  uint32_t due_version[STEER_NAV_CLASSES], served_version[STEER_NAV_CLASSES],
      rebuild_version[STEER_NAV_CLASSES];
  uint64_t rebuild_due[STEER_NAV_CLASSES], lm_due[STEER_NAV_CLASSES];
  uint8_t lm_on;
  plan_act act;
} state_tail;

/* Reads it (ready: the served classes; m: the queue's length). 0, or -1 when
 * it is not sound. */
static int get_tail(steer_rbuf *r, uint32_t version, uint8_t ready, uint32_t m, state_tail *t) {
  for (uint32_t c = 0; c < STEER_NAV_CLASSES; c++) {
    t->due_version[c] = steer_get_u32(r);
    t->served_version[c] = steer_get_u32(r);
    t->rebuild_due[c] = steer_get_u64(r);
    t->rebuild_version[c] = steer_get_u32(r);
    if (t->rebuild_due[c] && !((ready >> c) & 1u))
      return -1; /* only a served class is rebuilt */
  }
  if (version >= 4u) {
    for (uint32_t c = 0; c < STEER_NAV_CLASSES; c++)
      t->lm_due[c] = steer_get_u64(r);
    t->lm_on = steer_get_u8(r);
    for (uint32_t c = 0; c < STEER_NAV_CLASSES; c++)
      if ((t->lm_due[c] || (t->lm_on >> c) & 1u) &&
          (!((ready >> c) & 1u) || (t->lm_due[c] && (t->lm_on >> c) & 1u)))
        return -1; /* a served class's landmarks are due or used, not both */
  }
  plan_act *a = &t->act;
  a->on = steer_get_u8(r);
  if (!a->on)
    return r->bad ? -1 : 0;
  vec2 *pts[4] = {&a->from, &a->goal, &a->mesh_goal, &a->lead_pt};
  for (int i = 0; i < 4; i++) {
    pts[i]->x = steer_get_f32(r);
    pts[i]->y = steer_get_f32(r);
    if (!finite2(*pts[i]))
      return -1;
  }
  a->lead = steer_get_u8(r);
  a->cls = steer_get_u8(r);
  a->spent = steer_get_u32(r);
  a->version = steer_get_u32(r);
  a->tick = steer_get_u64(r);
  a->lm = version >= 4u ? steer_get_u8(r) : 0u;
  return r->bad || a->on != 1u || a->lead > 1u || a->cls >= STEER_NAV_CLASSES || m == 0 || a->lm > 1u ||
                 (a->lm && !((t->lm_on >> a->cls) & 1u))
             ? -1
             : 0;
}

int steer_planner_load(steer_planner *p, const uint8_t *buf, size_t len) {
  if (!p || !buf || len < STATE_HEAD + 4u + 8u || memcmp(buf, STATE_MAGIC, 4) != 0)
    return STEER_ECORRUPT;
  if (steer_le64(buf + len - 8) != steer_fnv1a(STEER_FNV1A_OFFSET, buf, len - 8))
    return STEER_ECORRUPT;
  steer_rbuf r = steer_rbuf_make(buf, len - 8);
  r.pos = 4;
  uint32_t version = steer_get_u32(&r);
  if (version < 1u || version > STEER_PLANNER_STATE_VERSION)
    return STEER_EVERSION;
  uint32_t cap = steer_get_u32(&r), n = steer_get_u32(&r);
  if (cap != p->cap || n > cap || (size_t)n * STATE_RECORD > steer_rbuf_left(&r))
    return STEER_ECORRUPT;
  /* Parsed into a fresh table first: p changes only when all of it is sound. */
  goto_rec *rec = calloc(p->cap, sizeof *rec);
  uint32_t *ring = calloc(p->cap, sizeof *ring);
  int rc = STEER_ECORRUPT;
  if (!rec || !ring) {
    rc = STEER_ENOMEM;
    goto out;
  }
  int64_t last = -1;
  for (uint32_t i = 0; i < n; i++) {
    steer_id id = steer_get_u32(&r);
    uint32_t s = id & STEER_ID_INDEX_MASK;
    if (r.bad || id == 0 || s >= cap || (int64_t)s <= last)
      goto out;
    last = s;
    goto_rec *q = &rec[s];
    q->id = id;
    q->status = steer_get_u8(&r);
    q->reason = steer_get_u8(&r);
    q->partial = steer_get_u8(&r);
    q->g.target.kind = steer_get_u8(&r);
    q->g.target.point.x = steer_get_f32(&r);
    q->g.target.point.y = steer_get_f32(&r);
    q->g.target.agent = steer_get_u32(&r);
    q->g.node_radius = steer_get_f32(&r);
    q->g.cornering = steer_get_u8(&r);
    q->g.replan_distance = steer_get_f32(&r);
    q->path = (int32_t)steer_get_u32(&r);
    q->map_version = steer_get_u32(&r);
    q->goal.x = steer_get_f32(&r);
    q->goal.y = steer_get_f32(&r);
    if (r.bad || q->status == STEER_GOTO_NONE || q->status >= STEER_GOTO_STATUS_COUNT ||
        q->reason >= STEER_PLAN_REASON_COUNT || q->partial > 1 || q->g.cornering >= STEER_CORNER_COUNT ||
        !(q->g.node_radius > 0.0f && q->g.node_radius <= STEER_MAX_DISTANCE) ||
        !(q->g.replan_distance >= 0.0f && q->g.replan_distance <= STEER_MAX_DISTANCE) || q->path < -1 ||
        !finite2(q->goal) || !finite2(q->g.target.point))
      goto out;
    if (q->g.target.kind == STEER_TARGET_POINT) {
      if (q->g.target.agent != 0)
        goto out;
    } else if (q->g.target.kind != STEER_TARGET_AGENT || q->g.target.agent == 0 || q->g.target.agent == id ||
               q->g.target.point.x != 0.0f || q->g.target.point.y != 0.0f) {
      goto out;
    }
  }
  uint32_t m = steer_get_u32(&r);
  const size_t tail = version == 1u ? 0u
                                    : STATE_CLASSES + (version >= 3u ? STATE_REBUILD + 1u : 0u) +
                                          (version >= 4u ? STATE_LANDMARKS : 0u);
  const size_t act = version >= 4u ? STATE_ACT : STATE_ACT - 1u;
  size_t left = steer_rbuf_left(&r);
  if (r.bad || m > cap || (size_t)m * 4u + tail > left ||
      ((size_t)m * 4u + tail != left && (version < 3u || (size_t)m * 4u + tail + act != left)))
    goto out;
  for (uint32_t i = 0; i < m; i++) {
    uint32_t s = steer_get_u32(&r);
    if (s >= cap || rec[s].queued)
      goto out;
    rec[s].queued = 1;
    ring[i] = s;
  }
  /* Version 1 came from planners that served every class at once. */
  uint8_t ready = 0xffu;
  uint64_t due[STEER_NAV_CLASSES] = {0};
  if (version != 1u) {
    ready = steer_get_u8(&r);
    for (uint32_t c = 0; c < STEER_NAV_CLASSES; c++) {
      due[c] = steer_get_u64(&r);
      if (due[c] && (ready >> c) & 1u)
        goto out; /* a class is ready or waiting, not both */
    }
    if (r.bad)
      goto out;
  }
  /* Version 3: the mesh rebuilds, and the head's plan in progress. */
  state_tail t;
  memset(&t, 0, sizeof t);
  if (version >= 3u && get_tail(&r, version, ready, m, &t) != 0)
    goto out;
  if (r.bad || steer_rbuf_left(&r) != 0)
    goto out;
  for (uint32_t s = 0; s < cap; s++) /* a request waiting for its first plan is in the queue */
    if (rec[s].id != 0 && rec[s].status == STEER_GOTO_QUEUED && !rec[s].queued)
      goto out;
  for (uint32_t s = 0; s < cap; s++)
    if (rec[s].id == 0)
      rec[s].path = -1;
  memcpy(p->rec, rec, (size_t)cap * sizeof *rec);
  memcpy(p->ring, ring, (size_t)cap * sizeof *ring);
  p->head = 0;
  p->count = m;
  p->nevents = 0;
  p->ready = ready;
  memcpy(p->due, due, sizeof due);
  memcpy(p->due_version, t.due_version, sizeof t.due_version);
  memcpy(p->served_version, t.served_version, sizeof t.served_version);
  memcpy(p->rebuild_due, t.rebuild_due, sizeof t.rebuild_due);
  memcpy(p->rebuild_version, t.rebuild_version, sizeof t.rebuild_version);
  p->versions_unknown = version < 3u;
  memcpy(p->lm_due, t.lm_due, sizeof t.lm_due);
  p->lm_on = t.lm_on;
  p->lm_unknown = version < 4u;
  p->act = t.act; /* begun again by the next update */
  p->act.slot = m ? ring[0] : 0;
  p->restoring = 1;
  rc = STEER_OK;
out:
  free(rec);
  free(ring);
  return rc;
}
