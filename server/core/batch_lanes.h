/* batch_lanes.h: the lean batches of batch.c, written once for W lanes.
 *
 * batch.c includes this file twice, with BL_W 4 (SSE2) and BL_W 8 (AVX,
 * chosen at run time): the kernels read their lanes from the world's arrays
 * and records, steer and integrate with simdw.h's functions (the same ones
 * the four-lane kernels of steering.c and path.c use), and store the kept
 * lanes. Not a public header: no include guard. */

#include "simdw.h"

/* integrate_store's world edge (world_tick.c): outside [lo, hi] on an axis, the
 * position is clamped and that axis' velocity stopped. */
BL_INLINE void BL(vedge)(VF *p, VF *v, float lo, float hi) {
  VF vlo = V1(lo), vhi = V1(hi);
  VF out = VOR(VLT(*p, vlo), VGT(*p, vhi));
  *p = BL(vsel)(out, BL(vclamp)(*p, vlo, vhi), *p);
  *v = VANDN(out, *v);
}

/* The first 4 * parts floats of the agents' records (world_batch_rec):
 * f[0..3] the limits, f[4 + j] k[j]. */
BL_INLINE void BL(vrec)(const world_batch_rec *rec, const uint32_t *dd, int parts, VF *f) {
  for (int part = 0; part < parts; part++) {
    const float *p[BL_W];
    for (unsigned i = 0; i < VW; i++)
      p[i] = &rec[dd[i]].max_speed + 4 * part;
    BL(vrows4)(p, f + 4 * part);
  }
}

/* The lanes to keep of want: not in bad, and no NaN in the new state (a
 * NaN's sign and payload depend on which operand the compiled scalar code
 * names first: such lanes take the scalar code). */
BL_INLINE unsigned BL(vkeep)(unsigned want, VF bad, VF px, VF py, VF vx, VF vy, VF th, VF om) {
  bad = VOR(bad, VOR(VUNORD(px, py), VOR(VUNORD(vx, vy), VUNORD(th, om))));
  return want & ~(unsigned)VMASK(bad);
}

/* Stores state lanes res (px py vx vy theta omega) of the kept lanes. */
BL_INLINE void BL(vstore_state)(steer_world *w, const uint32_t *dd, unsigned keep, VF px, VF py, VF vx, VF vy,
                                VF th, VF om) {
  float r[6][BL_W];
  VSTORE(r[0], px);
  VSTORE(r[1], py);
  VSTORE(r[2], vx);
  VSTORE(r[3], vy);
  VSTORE(r[4], th);
  VSTORE(r[5], om);
  for (unsigned i = 0; i < VW; i++) {
    if (!(keep & (1u << i)))
      continue;
    uint32_t d = dd[i];
    w->px[d] = r[0][i];
    w->py[d] = r[1][i];
    w->vx[d] = r[2][i];
    w->vy[d] = r[3][i];
    w->theta[d] = r[4][i];
    w->omega[d] = r[5][i];
  }
}

/* events_mark and events_precheck for the kept lanes of an arrive+look or
 * dynamic batch: an arrival to report when not arrived before and now
 * inside target_radius (bit i of inside: the rare case, the point and radius
 * go to the events pass); else nothing for the events pass to look at. */
BL_INLINE void BL(vmark_events)(steer_world *w, const uint32_t *dd, unsigned keep, unsigned inside) {
  const world_batch_rec *rec = w->brec;
  for (unsigned i = 0; i < VW; i++) {
    if (!(keep & (1u << i)))
      continue;
    uint32_t d = dd[i];
    if ((inside & (1u << i)) && !w->arrived[d]) {
      w->ekind[d] = EV_ARRIVE;
      w->ept[d] = v2(rec[d].k[6], rec[d].k[7]);
      w->er[d] = rec[d].k[1];
    } else {
      w->ekind[d] = EV_NONE;
    }
  }
}

/* A dynamic agent arriving at a point and looking where it goes
 * (steer_arrive's linear part, steer_look_where_going's angular part), then
 * steer_integrate_dynamic, integrate_store and events_precheck. */
BL_FN unsigned BL(lean_arrive)(steer_world *w, float dt, const uint32_t *dd, unsigned want) {
  const world_batch_rec *rec = w->brec;
#define PX(i) w->px[dd[i]]
#define PY(i) w->py[dd[i]]
#define VX(i) w->vx[dd[i]]
#define VY(i) w->vy[dd[i]]
#define TH(i) w->theta[dd[i]]
#define OM(i) w->omega[dd[i]]
  const VF t = V1(dt);
  VF px = VGATHER(PX), py = VGATHER(PY), vx = VGATHER(VX), vy = VGATHER(VY), th = VGATHER(TH),
     om = VGATHER(OM);
  VF f[12];
  BL(vrec)(rec, dd, 3, f);
  const VF tr = f[5], tx = f[10], ty = f[11];
  VF bad = VZERO, lx, ly, ang;
  BL(varrive_look)(px, py, vx, vy, th, om, f, &lx, &ly, &ang, &bad);
  BL(vintegrate_dynamic)(lx, ly, ang, f[0], f[1], f[2], f[3], t, &px, &py, &vx, &vy, &th, &om, &bad);
  BL(vedge)(&px, &vx, w->cfg.min.x, w->cfg.max.x);
  BL(vedge)(&py, &vy, w->cfg.min.y, w->cfg.max.y);
  unsigned keep = BL(vkeep)(want, bad, px, py, vx, vy, th, om);
  BL(vstore_state)(w, dd, keep, px, py, vx, vy, th, om);
  /* events_mark and events_precheck: an arrival to report when not arrived
   * before and now inside target_radius (the rare case: the point and
   * radius go to the events pass). */
  VF ex = tx - px, ey = ty - py;
  unsigned inside = (unsigned)VMASK(VLT(ex * ex + ey * ey, tr * tr));
  BL(vmark_events)(w, dd, keep, inside);
  return keep;
#undef PX
#undef PY
#undef VX
#undef VY
#undef TH
#undef OM
}

/* A dynamic wanderer: steer_wander (its generator advanced, its wander angle
 * stored), then steer_integrate_dynamic and integrate_store. */
BL_FN unsigned BL(lean_wander)(steer_world *w, float dt, const uint32_t *dd, unsigned want) {
  const world_batch_rec *rec = w->brec;
  steer_rng rng[BL_W];
  float bin[BL_W];
  for (unsigned i = 0; i < VW; i++) {
    rng[i] = w->arng[dd[i]];
    bin[i] = steer_rng_binomial(&rng[i]);
  }
#define PX(i) w->px[dd[i]]
#define PY(i) w->py[dd[i]]
#define VX(i) w->vx[dd[i]]
#define VY(i) w->vy[dd[i]]
#define TH(i) w->theta[dd[i]]
#define OM(i) w->omega[dd[i]]
#define WA(i) w->wander[dd[i]]
  const VF t = V1(dt);
  VF bad = VZERO;
  VF px = VGATHER(PX), py = VGATHER(PY), vx = VGATHER(VX), vy = VGATHER(VY), th = VGATHER(TH),
     om = VGATHER(OM);
  VF f[12];
  BL(vrec)(rec, dd, 3, f);
  VF lx, ly, ang, wa;
  BL(vwander)(px, py, th, om, VGATHER(WA), VLOAD(bin), t, f, &lx, &ly, &ang, &wa, &bad);
  BL(vintegrate_dynamic)(lx, ly, ang, f[0], f[1], f[2], f[3], t, &px, &py, &vx, &vy, &th, &om, &bad);
  BL(vedge)(&px, &vx, w->cfg.min.x, w->cfg.max.x);
  BL(vedge)(&py, &vy, w->cfg.min.y, w->cfg.max.y);
  unsigned keep = BL(vkeep)(want, bad, px, py, vx, vy, th, om);
  BL(vstore_state)(w, dd, keep, px, py, vx, vy, th, om);
  float was[BL_W];
  VSTORE(was, wa);
  for (unsigned i = 0; i < VW; i++) {
    if (!(keep & (1u << i)))
      continue;
    uint32_t d = dd[i];
    w->arng[d] = rng[i];
    w->wander[d] = was[i];
    w->ekind[d] = EV_NONE;
  }
  return keep;
#undef PX
#undef PY
#undef VX
#undef VY
#undef TH
#undef OM
#undef WA
}

/* A heading-model path follower: steer_path_steer_heading (any cornering
 * but lazy, a live path not finished), steer_integrate_heading,
 * integrate_store and events_precheck (path_quiet). */
BL_FN unsigned BL(lean_path)(steer_world *w, float dt, const uint32_t *dd, unsigned want) {
  const world_batch_rec *rec = w->brec;
  /* Per lane, what steer_path_steer_heading and path_quiet read of the path
   * and the cursor. */
  float nx[BL_W], ny[BL_W], hr[BL_W], pr[BL_W], fin[BL_W], turn[BL_W], rate[BL_W], arc[BL_W];
  for (unsigned i = 0; i < VW; i++) {
    uint32_t d = dd[i];
    int32_t h = w->path[d];
    const steer_path_cursor *c = &w->cursor[d];
    nx[i] = ny[i] = hr[i] = pr[i] = rate[i] = 0.0f;
    fin[i] = turn[i] = arc[i] = 0.0f;
    const path_entry *e = h >= 0 ? &w->paths[h] : NULL;
    if (!e || e->count == 0 || c->finished || e->cornering == STEER_CORNER_LAZY) {
      want &= ~(1u << i); /* stopped, or the lazy law: the scalar path */
      continue;
    }
    uint32_t node = c->node < e->count ? c->node : e->count - 1u;
    vec2 pt = w->path_points[(size_t)h * w->cfg.max_path_points + node];
    nx[i] = pt.x;
    ny[i] = pt.y;
    hr[i] = 0.5f * e->radius;
    pr[i] = e->radius;
    fin[i] = e->count == 1u || (e->mode == STEER_PATH_ONCE && node == e->count - 1u) ? 1.0f : 0.0f;
    turn[i] = c->turn_time_left > 0.0f ? 1.0f : 0.0f;
    arc[i] = e->cornering == STEER_CORNER_ARC ? 1.0f : 0.0f;
    rate[i] = c->turn_rate;
  }
  if (!want)
    return 0;
#define PX(i) w->px[dd[i]]
#define PY(i) w->py[dd[i]]
#define VX(i) w->vx[dd[i]]
#define VY(i) w->vy[dd[i]]
#define TH(i) w->theta[dd[i]]
  const VF zero = VZERO, one = V1(1.0f), t = V1(dt);
  VF px = VGATHER(PX), py = VGATHER(PY), vx = VGATHER(VX), vy = VGATHER(VY), th = VGATHER(TH);
  VF f[8];
  BL(vrec)(rec, dd, 2, f);
  const VF ms = f[0], ma = f[1], mr = f[2], ttd = f[4];
  VF is_turn = VEQ(VLOAD(turn), one), is_fin = VEQ(VLOAD(fin), one);
  VF tx = VLOAD(nx), ty = VLOAD(ny);
  VF bad = zero, o_rot, o_speed, speed_now, r;
  BL(vpath_heading)
  (px, py, vx, vy, th, ms, ma, mr, tx, ty, VLOAD(hr), is_fin, is_turn, VLOAD(rate), &o_rot, &o_speed,
   &speed_now, &bad);
  BL(vintegrate_heading)(o_rot, o_speed, speed_now, ms, ma, mr, t, &px, &py, &vx, &vy, &th, &r, &bad);
  BL(vedge)(&px, &vx, w->cfg.min.x, w->cfg.max.x);
  BL(vedge)(&py, &vy, w->cfg.min.y, w->cfg.max.y);
  unsigned keep = BL(vkeep)(want, bad, px, py, vx, vy, th, r);
  BL(vstore_state)(w, dd, keep, px, py, vx, vy, th, r);
  /* path_quiet: not in a turn, the node out of its radius and (arc
   * cornering) further than the turn trigger distance. */
  VF ex = px - tx, ey = py - ty;
  VF nd = VSQRT(ex * ex + ey * ey);
  VF far_arc = VOR(VEQ(VLOAD(arc), zero), VGT(nd, ttd));
  VF quiet = VANDN(is_turn, VANDN(VLE(nd, VLOAD(pr)), far_arc));
  unsigned quiet_bits = (unsigned)VMASK(quiet);
  for (unsigned i = 0; i < VW; i++) {
    if (!(keep & (1u << i)))
      continue;
    uint32_t d = dd[i];
    if (quiet_bits & (1u << i)) {
      w->ekind[d] = EV_NONE;
    } else {
      w->ekind[d] = EV_PATH;
      w->er[d] = rec[d].k[0];
    }
  }
  return keep;
#undef PX
#undef PY
#undef VX
#undef VY
#undef TH
}

#if BL_W == 4
/* The end of a quad of dynamic agents of `kind` (arrive + look, or wander)
 * whose outputs o[] are final (after separation, avoidance): as
 * steer_integrate_dynamic, integrate_store in a world without a map and
 * events_mark + events_precheck. Lanes of agents with stuck detection are
 * not done (the events pass reads their behaviour). */
BL_FN unsigned BL(finish_dynamic)(steer_world *w, float dt, int kind, const uint32_t *dd,
                                  const steer_output *o) {
  const world_batch_rec *rec = w->brec;
  unsigned want = 0;
  for (unsigned i = 0; i < VW; i++)
    if (!(w->bkind[dd[i]] & BATCH_STUCK))
      want |= 1u << i;
  if (!want)
    return 0;
#define PX(i) w->px[dd[i]]
#define PY(i) w->py[dd[i]]
#define VX(i) w->vx[dd[i]]
#define VY(i) w->vy[dd[i]]
#define TH(i) w->theta[dd[i]]
#define OM(i) w->omega[dd[i]]
#define OX(i) o[i].linear.x
#define OY(i) o[i].linear.y
#define OA(i) o[i].angular
  VF px = VGATHER(PX), py = VGATHER(PY), vx = VGATHER(VX), vy = VGATHER(VY), th = VGATHER(TH),
     om = VGATHER(OM);
  VF f[12];
  BL(vrec)(rec, dd, kind == BATCH_ARRIVE_LOOK ? 3 : 1, f);
  VF bad = VZERO;
  BL(vintegrate_dynamic)
  (VGATHER(OX), VGATHER(OY), VGATHER(OA), f[0], f[1], f[2], f[3], V1(dt), &px, &py, &vx, &vy, &th, &om, &bad);
  BL(vedge)(&px, &vx, w->cfg.min.x, w->cfg.max.x);
  BL(vedge)(&py, &vy, w->cfg.min.y, w->cfg.max.y);
  unsigned keep = BL(vkeep)(want, bad, px, py, vx, vy, th, om);
  BL(vstore_state)(w, dd, keep, px, py, vx, vy, th, om);
  unsigned inside = 0;
  if (kind == BATCH_ARRIVE_LOOK) {
    VF ex = f[10] - px, ey = f[11] - py;
    inside = (unsigned)VMASK(VLT(ex * ex + ey * ey, f[5] * f[5]));
  }
  BL(vmark_events)(w, dd, keep, inside);
  return keep;
#undef PX
#undef PY
#undef VX
#undef VY
#undef TH
#undef OM
#undef OX
#undef OY
#undef OA
}
#endif

#include "simdw_end.h"
