// detour_nav: the anchor for the GOTO planner's figures. It plans the same Moving AI grid
// problems with Recast/Detour (Debian's librecast-dev, 1.5.1), built the way a game team
// would, so both planners can be compared map by map and problem by problem.
//
// What it does:
//   1. The .map becomes a triangle soup: each free cell ('.', 'G') a floor quad at height 0,
//      each blocked cell ('@', 'O', 'T', 'S', 'W') a 2 m box whose faces are not walkable,
//      so Recast erodes the floor around it. Cell (x, y) is column x, row y
//      and covers [x, x+1] x [y, y+1] metres; map x is Recast's x and map y Recast's z.
//      Recast builds a tiled navmesh of it (cell size --cs, agent radius --radius, height 2,
//      climb 0.2, watershed regions, six-vertex polygons, a detail mesh) and Detour loads the
//      tiles. It prints the build's wall and CPU time, the navmesh's memory (every byte Detour
//      allocates for it and keeps) and the build's peak Recast heap (tiles are built one at
//      a time, so this is one tile's working set).
//   2. Each .scen problem: findNearestPoly for the start (sx+0.5, sy+0.5) and the goal (not
//      timed), then findPath and findStraightPath, timed together on the thread's CPU clock.
//      It prints plan µs p50/p99/max, plans per CPU second, how many were found, partial
//      (Detour's best guess did not reach the goal, or the nearest navmesh point to the start
//      or goal is outside its cell) or failed (no polygon whose bounds come within 1 m of the
//      start or goal, or no path at all), route length / .scen optimal (min/median/max over
//      found problems with optimal > 0; the length is the straight path's, from the start's
//      nearest navmesh point to the goal's, in the ground plane), and the least clearance of each straight
//      path to the blocked cells and to the map's edge, exact in doubles, and how many paths touch or cross a
//      blocked cell.
//   --csv FILE writes one line per problem: index (0-based, .scen order), found (1 found,
//   0 partial, -1 failed), cpu_us, length, optimal, clearance; a field that does not apply
//   (a failed problem's length) is empty.
//
// Maps and scenarios: any Moving AI .map and .scen pair; the .scen's width and height must
// match the map's.
//
// Build (only when librecast-dev is installed; scripts/setup.sh installs it):
//   cmake -S . -B build && cmake --build build --target detour_nav
// Run:
//   build/bench/detour_nav MAP.map MAP.map.scen [--cs 0.1] [--radius 0.25] [--tile 256]
//                          [--nodes 65535] [--csv FILE]
//
// Route lengths are any-angle, so they can be shorter than the .scen's octile optimum
// (ratios below 1 are expected). Recast rounds the radius up to whole voxels
// (ceil(radius / cs)) and simplifies contours by up to 1.3 voxels, so the measured
// clearance is what a game would get, not the nominal radius.

#include <DetourAlloc.h>
#include <DetourNavMesh.h>
#include <DetourNavMeshBuilder.h>
#include <DetourNavMeshQuery.h>
#include <DetourStatus.h>
#include <Recast.h>
#include <RecastAlloc.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <time.h>
#include <vector>

namespace {

[[noreturn]] void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "detour_nav: ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
  std::exit(1);
}

double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// Heap accounting: Recast's and Detour's allocators are replaced by ones that keep the size
// in a header, so the navmesh's memory is the bytes it holds, not an estimate.
struct Heap {
  size_t live[2]; // by hint: 0 persistent, 1 temporary
  size_t total_live;
  size_t peak;
};
Heap rc_heap, dt_heap;

constexpr size_t kHeader = 16; // keeps the allocations 16-byte aligned

void *counted_alloc(Heap &h, size_t size, int hint) {
  unsigned char *p = (unsigned char *)std::malloc(size + kHeader);
  if (!p)
    return nullptr;
  size_t meta[2] = {size, (size_t)hint};
  std::memcpy(p, meta, sizeof meta);
  h.live[hint] += size;
  h.total_live += size;
  h.peak = std::max(h.peak, h.total_live);
  return p + kHeader;
}

void counted_free(Heap &h, void *ptr) {
  if (!ptr)
    return;
  unsigned char *p = (unsigned char *)ptr - kHeader;
  size_t meta[2];
  std::memcpy(meta, p, sizeof meta);
  h.live[meta[1]] -= meta[0];
  h.total_live -= meta[0];
  std::free(p);
}

void *rc_alloc(size_t size, rcAllocHint hint) { return counted_alloc(rc_heap, size, hint == RC_ALLOC_TEMP); }
void rc_free(void *p) { counted_free(rc_heap, p); }
void *dt_alloc(size_t size, dtAllocHint hint) { return counted_alloc(dt_heap, size, hint == DT_ALLOC_TEMP); }
void dt_free(void *p) { counted_free(dt_heap, p); }

// Recast's errors go to stderr; its timers stay off (they cost time in every step).
class Context : public rcContext {
public:
  Context() : rcContext(false) { enableLog(true); }

protected:
  void doLog(const rcLogCategory category, const char *msg, const int len) override {
    if (category != RC_LOG_PROGRESS)
      std::fprintf(stderr, "recast: %.*s\n", len, msg);
  }
};

struct Grid {
  int w = 0, h = 0;
  std::vector<unsigned char> blocked; // row-major, 1 = blocked
  bool at(int x, int y) const {       // outside the map counts as blocked
    return x < 0 || y < 0 || x >= w || y >= h || blocked[(size_t)y * w + x];
  }
};

Grid read_map(const char *path) {
  FILE *f = std::fopen(path, "r");
  if (!f)
    die("%s: %s", path, std::strerror(errno));
  Grid g;
  char line[1 << 16];
  bool in_map = false;
  int row = 0;
  while (std::fgets(line, sizeof line, f)) {
    size_t n = std::strcspn(line, "\r\n");
    line[n] = 0;
    if (!in_map) {
      if (std::sscanf(line, "height %d", &g.h) == 1 || std::sscanf(line, "width %d", &g.w) == 1)
        continue;
      if (std::strncmp(line, "type", 4) == 0)
        continue;
      if (std::strcmp(line, "map") == 0) {
        if (g.w <= 0 || g.h <= 0 || g.w > 8192 || g.h > 8192)
          die("%s: bad size %dx%d", path, g.w, g.h);
        g.blocked.assign((size_t)g.w * g.h, 1);
        in_map = true;
        continue;
      }
      die("%s: unexpected header line '%s'", path, line);
    }
    if (row >= g.h) {
      if (n == 0)
        continue;
      die("%s: more than %d rows", path, g.h);
    }
    if ((int)n < g.w)
      die("%s: row %d has %zu cells, not %d", path, row, n, g.w);
    for (int x = 0; x < g.w; x++) {
      char c = line[x];
      if (c == '.' || c == 'G')
        g.blocked[(size_t)row * g.w + x] = 0;
      else if (!std::strchr("@OTSW", c))
        die("%s: row %d column %d: unknown terrain '%c'", path, row, x, c);
    }
    row++;
  }
  std::fclose(f);
  if (!in_map || row != g.h)
    die("%s: %d rows, not %d", path, row, g.h);
  return g;
}

struct Problem {
  int sx, sy, gx, gy;
  double optimal;
};

std::vector<Problem> read_scen(const char *path, const Grid &g) {
  FILE *f = std::fopen(path, "r");
  if (!f)
    die("%s: %s", path, std::strerror(errno));
  std::vector<Problem> out;
  char line[1 << 14];
  int lineno = 0;
  while (std::fgets(line, sizeof line, f)) {
    lineno++;
    line[std::strcspn(line, "\r\n")] = 0;
    if (lineno == 1) {
      if (std::strncmp(line, "version", 7) != 0)
        die("%s: first line is not 'version ...'", path);
      continue;
    }
    if (!line[0])
      continue;
    // bucket, map, width, height, sx, sy, gx, gy, optimal: tab-separated (the map's name
    // may hold spaces).
    std::vector<char *> fields;
    for (char *p = line;;) {
      fields.push_back(p);
      char *tab = std::strchr(p, '\t');
      if (!tab)
        break;
      *tab = 0;
      p = tab + 1;
    }
    if (fields.size() != 9)
      die("%s:%d: %zu fields, not 9", path, lineno, fields.size());
    int v[6];
    for (int i = 0; i < 6; i++)
      v[i] = std::atoi(fields[2 + i]);
    Problem p = {v[2], v[3], v[4], v[5], std::strtod(fields[8], nullptr)};
    if (v[0] != g.w || v[1] != g.h)
      die("%s:%d: map size %dx%d, the map is %dx%d", path, lineno, v[0], v[1], g.w, g.h);
    if (g.at(p.sx, p.sy) || g.at(p.gx, p.gy))
      die("%s:%d: start or goal on a blocked cell", path, lineno);
    out.push_back(p);
  }
  std::fclose(f);
  return out;
}

// The triangle soup and, for each cell, the range of its triangles (the spatial index a tile
// uses to find the triangles over it).
struct Soup {
  std::vector<float> verts;
  std::vector<int> tris;
  std::vector<unsigned char> areas;
  std::vector<int> first; // (w*h + 1) entries: cell i owns triangles [first[i], first[i+1])
};

void add_quad(Soup &s, const float a[3], const float b[3], const float c[3], const float d[3],
              unsigned char area) {
  int base = (int)(s.verts.size() / 3);
  for (const float *v : {a, b, c, d})
    s.verts.insert(s.verts.end(), v, v + 3);
  // Counter-clockwise seen from above (Recast's up is +y), so floors face up.
  int t[6] = {base, base + 2, base + 1, base, base + 3, base + 2};
  s.tris.insert(s.tris.end(), t, t + 6);
  s.areas.push_back(area);
  s.areas.push_back(area);
}

Soup make_soup(const Grid &g, float box_h) {
  Soup s;
  s.first.reserve((size_t)g.w * g.h + 1);
  for (int y = 0; y < g.h; y++) {
    for (int x = 0; x < g.w; x++) {
      s.first.push_back((int)(s.tris.size() / 3));
      float x0 = (float)x, x1 = (float)(x + 1), z0 = (float)y, z1 = (float)(y + 1);
      if (!g.at(x, y)) {
        float a[3] = {x0, 0, z0}, b[3] = {x1, 0, z0}, c[3] = {x1, 0, z1}, d[3] = {x0, 0, z1};
        add_quad(s, a, b, c, d, RC_WALKABLE_AREA);
        continue;
      }
      // A box: its top and the sides that face free cells, none of them walkable.
      float a[3] = {x0, box_h, z0}, b[3] = {x1, box_h, z0}, c[3] = {x1, box_h, z1}, d[3] = {x0, box_h, z1};
      add_quad(s, a, b, c, d, RC_NULL_AREA);
      const int nb[4][2] = {{0, -1}, {1, 0}, {0, 1}, {-1, 0}};
      const float *top[5] = {a, b, c, d, a};
      for (int i = 0; i < 4; i++) {
        if (g.at(x + nb[i][0], y + nb[i][1]))
          continue;
        const float *p = top[i], *q = top[i + 1];
        float p0[3] = {p[0], 0, p[2]}, q0[3] = {q[0], 0, q[2]};
        add_quad(s, p0, q0, q, p, RC_NULL_AREA);
      }
    }
  }
  s.first.push_back((int)(s.tris.size() / 3));
  return s;
}

struct Options {
  float cs = 0.1f;
  float ch = 0.1f;
  float radius = 0.25f;
  float agent_height = 2.0f;
  float climb = 0.2f;
  float box_height = 2.0f;
  // 256 voxels (25.6 m at 0.1 m): on a 512x512 map of 10 % random blocks and a 400x400 maze
  // the build's CPU time is within 15 % from 64 to 512, while plans get faster and the navmesh
  // smaller as tiles grow (fewer polygons cut at tile edges); 32 cannot hold a 512x512 map
  // in a 32-bit dtPolyRef, and 512 is nearly a single tile.
  int tile = 256;
  int nodes = 65535;
  const char *csv = nullptr;
};

struct BuildStats {
  int tiles_x = 0, tiles_y = 0, tiles_built = 0, polys = 0, verts = 0, max_tile_polys = 0;
  int walkable_radius = 0;
  size_t tile_bytes = 0;
  double wall_s = 0, cpu_s = 0;
};

int ilog2_ceil(unsigned v) {
  int r = 0;
  while ((1u << r) < v)
    r++;
  return r;
}

dtNavMesh *build_navmesh(const Grid &g, const Soup &soup, const Options &o, BuildStats &st) {
  rcConfig cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.cs = o.cs;
  cfg.ch = o.ch;
  cfg.walkableSlopeAngle = 45.0f;
  cfg.walkableHeight = (int)std::ceil(o.agent_height / cfg.ch);
  cfg.walkableClimb = (int)std::floor(o.climb / cfg.ch);
  cfg.walkableRadius = (int)std::ceil(o.radius / cfg.cs);
  cfg.maxEdgeLen = (int)(12.0f / cfg.cs);
  cfg.maxSimplificationError = 1.3f;
  cfg.minRegionArea = 8 * 8;
  cfg.mergeRegionArea = 20 * 20;
  cfg.maxVertsPerPoly = 6;
  // Never 0: Recast 1.5.1's detail triangulation loops forever, allocating, without samples.
  cfg.detailSampleDist = std::max(0.9f, 6.0f * cfg.cs);
  cfg.detailSampleMaxError = 1.0f * cfg.ch;
  cfg.tileSize = o.tile;
  cfg.borderSize =
      cfg.walkableRadius + 3; // as Recast's own tiled sample: erosion and filters see past the tile
  cfg.width = cfg.tileSize + 2 * cfg.borderSize;
  cfg.height = cfg.tileSize + 2 * cfg.borderSize;
  st.walkable_radius = cfg.walkableRadius;

  const float bmin[3] = {0, 0, 0}, bmax[3] = {(float)g.w, o.box_height, (float)g.h};
  int gw = 0, gh = 0;
  rcCalcGridSize(bmin, bmax, cfg.cs, &gw, &gh);
  st.tiles_x = (gw + cfg.tileSize - 1) / cfg.tileSize;
  st.tiles_y = (gh + cfg.tileSize - 1) / cfg.tileSize;
  const float tcs = (float)cfg.tileSize * cfg.cs;

  // A 32-bit dtPolyRef holds the salt (at least 10 bits), the tile and the polygon: the
  // tile count's bits leave the rest for polygons per tile.
  int tile_bits = ilog2_ceil((unsigned)(st.tiles_x * st.tiles_y));
  if (tile_bits > 14)
    die("%dx%d tiles of %d cells need %d bits of a 32-bit dtPolyRef (at most 14): use a larger --tile",
        st.tiles_x, st.tiles_y, cfg.tileSize, tile_bits);
  int poly_bits = 22 - tile_bits;

  Context ctx;
  double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  dtNavMesh *nav = dtAllocNavMesh();
  if (!nav)
    die("out of memory");
  dtNavMeshParams np;
  std::memset(&np, 0, sizeof np);
  rcVcopy(np.orig, bmin);
  np.tileWidth = tcs;
  np.tileHeight = tcs;
  np.maxTiles = 1 << tile_bits;
  np.maxPolys = 1 << poly_bits;
  if (dtStatusFailed(nav->init(&np)))
    die("dtNavMesh::init failed");

  std::vector<int> tile_tris;
  for (int ty = 0; ty < st.tiles_y; ty++) {
    for (int tx = 0; tx < st.tiles_x; tx++) {
      rcConfig tc = cfg;
      tc.bmin[0] = bmin[0] + (float)tx * tcs - (float)cfg.borderSize * cfg.cs;
      tc.bmin[1] = bmin[1];
      tc.bmin[2] = bmin[2] + (float)ty * tcs - (float)cfg.borderSize * cfg.cs;
      tc.bmax[0] = bmin[0] + (float)(tx + 1) * tcs + (float)cfg.borderSize * cfg.cs;
      tc.bmax[1] = bmax[1];
      tc.bmax[2] = bmin[2] + (float)(ty + 1) * tcs + (float)cfg.borderSize * cfg.cs;

      // The triangles of the cells under the tile and its border.
      tile_tris.clear();
      std::vector<unsigned char> tile_areas;
      int cx0 = std::max(0, (int)std::floor(tc.bmin[0])),
          cx1 = std::min(g.w - 1, (int)std::floor(tc.bmax[0]));
      int cy0 = std::max(0, (int)std::floor(tc.bmin[2])),
          cy1 = std::min(g.h - 1, (int)std::floor(tc.bmax[2]));
      for (int y = cy0; y <= cy1; y++) {
        for (int x = cx0; x <= cx1; x++) {
          size_t c = (size_t)y * g.w + x;
          for (int t = soup.first[c]; t < soup.first[c + 1]; t++) {
            tile_tris.insert(tile_tris.end(), &soup.tris[(size_t)t * 3], &soup.tris[(size_t)t * 3] + 3);
            tile_areas.push_back(soup.areas[t]);
          }
        }
      }
      if (tile_tris.empty())
        continue;

      rcHeightfield *hf = rcAllocHeightfield();
      if (!hf || !rcCreateHeightfield(&ctx, *hf, tc.width, tc.height, tc.bmin, tc.bmax, tc.cs, tc.ch))
        die("tile %d,%d: heightfield", tx, ty);
      if (!rcRasterizeTriangles(&ctx, soup.verts.data(), (int)(soup.verts.size() / 3), tile_tris.data(),
                                tile_areas.data(), (int)(tile_tris.size() / 3), *hf, tc.walkableClimb))
        die("tile %d,%d: rasterize", tx, ty);
      rcFilterLowHangingWalkableObstacles(&ctx, tc.walkableClimb, *hf);
      rcFilterLedgeSpans(&ctx, tc.walkableHeight, tc.walkableClimb, *hf);
      rcFilterWalkableLowHeightSpans(&ctx, tc.walkableHeight, *hf);

      rcCompactHeightfield *chf = rcAllocCompactHeightfield();
      if (!chf || !rcBuildCompactHeightfield(&ctx, tc.walkableHeight, tc.walkableClimb, *hf, *chf))
        die("tile %d,%d: compact heightfield", tx, ty);
      rcFreeHeightField(hf);
      if (!rcErodeWalkableArea(&ctx, tc.walkableRadius, *chf))
        die("tile %d,%d: erode", tx, ty);
      if (!rcBuildDistanceField(&ctx, *chf))
        die("tile %d,%d: distance field", tx, ty);
      if (!rcBuildRegions(&ctx, *chf, tc.borderSize, tc.minRegionArea, tc.mergeRegionArea))
        die("tile %d,%d: regions", tx, ty);

      rcContourSet *cset = rcAllocContourSet();
      if (!cset || !rcBuildContours(&ctx, *chf, tc.maxSimplificationError, tc.maxEdgeLen, *cset))
        die("tile %d,%d: contours", tx, ty);
      rcPolyMesh *pm = rcAllocPolyMesh();
      if (!pm || !rcBuildPolyMesh(&ctx, *cset, tc.maxVertsPerPoly, *pm))
        die("tile %d,%d: poly mesh", tx, ty);
      rcPolyMeshDetail *dm = rcAllocPolyMeshDetail();
      if (!dm || !rcBuildPolyMeshDetail(&ctx, *pm, *chf, tc.detailSampleDist, tc.detailSampleMaxError, *dm))
        die("tile %d,%d: detail mesh", tx, ty);
      rcFreeCompactHeightfield(chf);
      rcFreeContourSet(cset);

      if (pm->npolys > 0) {
        if (pm->npolys > np.maxPolys)
          die("tile %d,%d has %d polygons, a dtPolyRef holds %d per tile: use a smaller --tile", tx, ty,
              pm->npolys, np.maxPolys);
        for (int i = 0; i < pm->npolys; i++)
          pm->flags[i] = pm->areas[i] == RC_WALKABLE_AREA ? 1 : 0;
        dtNavMeshCreateParams p;
        std::memset(&p, 0, sizeof p);
        p.verts = pm->verts;
        p.vertCount = pm->nverts;
        p.polys = pm->polys;
        p.polyAreas = pm->areas;
        p.polyFlags = pm->flags;
        p.polyCount = pm->npolys;
        p.nvp = pm->nvp;
        p.detailMeshes = dm->meshes;
        p.detailVerts = dm->verts;
        p.detailVertsCount = dm->nverts;
        p.detailTris = dm->tris;
        p.detailTriCount = dm->ntris;
        p.walkableHeight = o.agent_height;
        p.walkableRadius = o.radius;
        p.walkableClimb = o.climb;
        p.tileX = tx;
        p.tileY = ty;
        p.tileLayer = 0;
        rcVcopy(p.bmin, pm->bmin);
        rcVcopy(p.bmax, pm->bmax);
        p.cs = tc.cs;
        p.ch = tc.ch;
        p.buildBvTree = true;
        unsigned char *data = nullptr;
        int size = 0;
        if (!dtCreateNavMeshData(&p, &data, &size))
          die("tile %d,%d: dtCreateNavMeshData", tx, ty);
        if (dtStatusFailed(nav->addTile(data, size, DT_TILE_FREE_DATA, 0, nullptr)))
          die("tile %d,%d: addTile", tx, ty);
        st.tiles_built++;
        st.polys += pm->npolys;
        st.verts += pm->nverts;
        st.max_tile_polys = std::max(st.max_tile_polys, pm->npolys);
        st.tile_bytes += (size_t)size;
      }
      rcFreePolyMesh(pm);
      rcFreePolyMeshDetail(dm);
    }
  }
  st.wall_s = clock_s(CLOCK_MONOTONIC) - w0;
  st.cpu_s = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  return nav;
}

// Exact distance in doubles from the segment a-b to the box [x0, x1] x [y0, y1]: zero when
// they meet, else the least of the endpoints' distances to the box and the corners'
// distances to the segment (two disjoint convex shapes are closest at a vertex of one).
double point_box(double px, double py, double x0, double y0, double x1, double y1) {
  double dx = px < x0 ? x0 - px : (px > x1 ? px - x1 : 0);
  double dy = py < y0 ? y0 - py : (py > y1 ? py - y1 : 0);
  return std::sqrt(dx * dx + dy * dy);
}

double point_segment(double px, double py, double ax, double ay, double bx, double by) {
  double ux = bx - ax, uy = by - ay, l2 = ux * ux + uy * uy;
  double t = l2 > 0 ? ((px - ax) * ux + (py - ay) * uy) / l2 : 0;
  t = std::min(1.0, std::max(0.0, t));
  double dx = ax + t * ux - px, dy = ay + t * uy - py;
  return std::sqrt(dx * dx + dy * dy);
}

bool segment_meets_box(double ax, double ay, double bx, double by, double x0, double y0, double x1,
                       double y1) {
  // Liang-Barsky: clip the parameter range [0, 1] by the box's four slabs (closed box).
  double t0 = 0, t1 = 1, d[2] = {bx - ax, by - ay}, a[2] = {ax, ay}, lo[2] = {x0, y0}, hi[2] = {x1, y1};
  for (int i = 0; i < 2; i++) {
    if (d[i] == 0) {
      if (a[i] < lo[i] || a[i] > hi[i])
        return false;
      continue;
    }
    double ta = (lo[i] - a[i]) / d[i], tb = (hi[i] - a[i]) / d[i];
    if (ta > tb)
      std::swap(ta, tb);
    t0 = std::max(t0, ta);
    t1 = std::min(t1, tb);
    if (t0 > t1)
      return false;
  }
  return true;
}

double segment_box(double ax, double ay, double bx, double by, double x0, double y0, double x1, double y1) {
  if (segment_meets_box(ax, ay, bx, by, x0, y0, x1, y1))
    return 0;
  double d = std::min(point_box(ax, ay, x0, y0, x1, y1), point_box(bx, by, x0, y0, x1, y1));
  d = std::min(d, point_segment(x0, y0, ax, ay, bx, by));
  d = std::min(d, point_segment(x1, y0, ax, ay, bx, by));
  d = std::min(d, point_segment(x1, y1, ax, ay, bx, by));
  d = std::min(d, point_segment(x0, y1, ax, ay, bx, by));
  return d;
}

// The least clearance of a polyline (x, y pairs) to the blocked cells and the map's edge
// (outside the map is blocked). Each segment checks every blocked cell within the best
// clearance so far: the columns the segment spans widened by it, and in each column the rows
// the segment spans there widened by it.
double path_clearance(const Grid &g, const std::vector<double> &pts) {
  double best = INFINITY;
  size_t n = pts.size() / 2;
  for (size_t i = 0; i < n; i++) {
    double x = pts[2 * i], y = pts[2 * i + 1];
    best = std::min(best, std::min(std::min(x, (double)g.w - x), std::min(y, (double)g.h - y)));
  }
  best = std::max(best, 0.0);
  for (size_t i = 0; i + 1 < n; i++) {
    double ax = pts[2 * i], ay = pts[2 * i + 1], bx = pts[2 * i + 2], by = pts[2 * i + 3];
    double r = best;
    double minx = std::min(ax, bx), maxx = std::max(ax, bx);
    int c0 = std::max(0, (int)std::floor(minx - r)), c1 = std::min(g.w - 1, (int)std::floor(maxx + r));
    for (int cx = c0; cx <= c1; cx++) {
      // The segment's part with x in [cx - r, cx + 1 + r], and its y range.
      double xa = std::max(minx, (double)cx - r), xb = std::min(maxx, (double)cx + 1 + r);
      if (xa > xb)
        continue;
      double ya, yb;
      if (bx == ax) {
        ya = std::min(ay, by);
        yb = std::max(ay, by);
      } else {
        double s = (by - ay) / (bx - ax);
        double y1 = ay + (xa - ax) * s, y2 = ay + (xb - ax) * s;
        ya = std::min(y1, y2);
        yb = std::max(y1, y2);
      }
      int r0 = std::max(0, (int)std::floor(ya - r)), r1 = std::min(g.h - 1, (int)std::floor(yb + r));
      for (int cy = r0; cy <= r1; cy++) {
        if (!g.blocked[(size_t)cy * g.w + cx])
          continue;
        double d = segment_box(ax, ay, bx, by, cx, cy, cx + 1, cy + 1);
        if (d < best)
          best = d;
      }
    }
  }
  return best;
}

double quantile(std::vector<double> v, double q) { // nearest rank; v by value: sorted here
  if (v.empty())
    return NAN;
  std::sort(v.begin(), v.end());
  size_t k = (size_t)std::ceil(q * (double)v.size());
  return v[k == 0 ? 0 : k - 1];
}

void usage() {
  std::fprintf(
      stderr,
      "usage: detour_nav MAP.map MAP.scen [--cs M] [--radius M] [--tile CELLS] [--nodes N] [--csv FILE]\n"
      "  --cs      Recast cell size in metres (0.1)\n"
      "  --radius  agent radius in metres (0.25)\n"
      "  --tile    navmesh tile size in Recast cells (256)\n"
      "  --nodes   the query's search nodes, at most 65535 (65535)\n"
      "  --csv     one line per problem: index,found,cpu_us,length,optimal,clearance\n");
  std::exit(2);
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  const char *map_path = nullptr, *scen_path = nullptr;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        usage();
      return argv[++i];
    };
    if (a == "--cs")
      o.cs = std::strtof(value(), nullptr);
    else if (a == "--radius")
      o.radius = std::strtof(value(), nullptr);
    else if (a == "--tile")
      o.tile = std::atoi(value());
    else if (a == "--nodes")
      o.nodes = std::atoi(value());
    else if (a == "--csv")
      o.csv = value();
    else if (a[0] == '-')
      usage();
    else if (!map_path)
      map_path = argv[i];
    else if (!scen_path)
      scen_path = argv[i];
    else
      usage();
  }
  if (!map_path || !scen_path)
    usage();
  if (!(o.cs > 0) || !(o.radius >= 0) || o.tile < 8 || o.nodes < 1 || o.nodes > 65535)
    usage();
  o.ch = std::min(o.cs, 0.1f); // fine enough that the 0.2 m climb and the 2 m boxes are whole voxels

  rcAllocSetCustom(rc_alloc, rc_free);
  dtAllocSetCustom(dt_alloc, dt_free);

  Grid g = read_map(map_path);
  std::vector<Problem> probs = read_scen(scen_path, g);
  size_t nblocked = 0;
  for (unsigned char b : g.blocked)
    nblocked += b;
  Soup soup = make_soup(g, o.box_height);

  BuildStats st;
  dtNavMesh *nav = build_navmesh(g, soup, o, st);
  size_t nav_bytes = dt_heap.live[0];
  dtNavMeshQuery *q = dtAllocNavMeshQuery();
  if (!q || dtStatusFailed(q->init(nav, o.nodes)))
    die("dtNavMeshQuery::init failed");
  size_t query_bytes = dt_heap.live[0] - nav_bytes;

  std::printf("detour_nav: %s %dx%d (%zu blocked cells), %s: %zu problems; Recast/Detour 1.5.1\n", map_path,
              g.w, g.h, nblocked, scen_path, probs.size());
  std::printf("  soup     %zu triangles (floors and boxes %.1f m high)\n", soup.tris.size() / 3,
              o.box_height);
  std::printf("  config   cs %.3f ch %.3f radius %.3f (eroded %d voxels = %.3f m) height %.1f climb %.2f "
              "tile %d cells (%.1f m)\n",
              o.cs, o.ch, o.radius, st.walkable_radius, st.walkable_radius * o.cs, o.agent_height, o.climb,
              o.tile, o.tile * o.cs);
  std::printf(
      "  build    %.2f s wall, %.2f s CPU; %dx%d tiles, %d with polygons; %d polygons (at most %d in a "
      "tile), %d vertices\n",
      st.wall_s, st.cpu_s, st.tiles_x, st.tiles_y, st.tiles_built, st.polys, st.max_tile_polys, st.verts);
  std::printf("  memory   navmesh %.2f MiB (tile data %.2f MiB); query %.2f MiB (%d nodes); Recast peak heap "
              "%.1f MiB during the build\n",
              nav_bytes / 1048576.0, st.tile_bytes / 1048576.0, query_bytes / 1048576.0, o.nodes,
              rc_heap.peak / 1048576.0);

  const int kMaxPath = 65536;
  std::vector<dtPolyRef> path(kMaxPath), spath_refs(kMaxPath);
  std::vector<float> spath((size_t)kMaxPath * 3);
  std::vector<unsigned char> spath_flags(kMaxPath);
  dtQueryFilter filter;
  const float ext[3] = {1.0f, 1.0f, 1.0f};

  FILE *csv = nullptr;
  if (o.csv) {
    csv = std::fopen(o.csv, "w");
    if (!csv)
      die("%s: %s", o.csv, std::strerror(errno));
    std::fprintf(csv, "index,found,cpu_us,length,optimal,clearance\n");
  }

  int found = 0, partial = 0, not_reached = 0, out_of_nodes = 0, off_cells = 0, failed = 0, no_poly = 0,
      snapped = 0, crossing = 0, below_r = 0;
  std::vector<double> times_us, ratios, clearances;
  double cpu_total = 0;
  std::vector<double> pts;
  for (size_t i = 0; i < probs.size(); i++) {
    const Problem &p = probs[i];
    float s[3] = {(float)p.sx + 0.5f, 0, (float)p.sy + 0.5f},
          e[3] = {(float)p.gx + 0.5f, 0, (float)p.gy + 0.5f};
    float sn[3], en[3];
    dtPolyRef sref = 0, eref = 0;
    q->findNearestPoly(s, ext, &filter, &sref, sn);
    q->findNearestPoly(e, ext, &filter, &eref, en);
    int status = -1; // 1 found, 0 partial, -1 failed
    double us = NAN, len = NAN, clear = NAN;
    if (!sref || !eref) {
      no_poly++;
    } else {
      if (std::hypot(sn[0] - s[0], sn[2] - s[2]) > 1e-3 || std::hypot(en[0] - e[0], en[2] - e[2]) > 1e-3)
        snapped++;
      // A route that starts or ends outside the problem's cells (the navmesh does not
      // reach the cell's centre and the nearest polygon is beyond the cell) is not the
      // problem's route.
      bool off_cell = (int)std::floor(sn[0]) != p.sx || (int)std::floor(sn[2]) != p.sy ||
                      (int)std::floor(en[0]) != p.gx || (int)std::floor(en[2]) != p.gy;
      int npath = 0, nspath = 0;
      double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
      dtStatus fs = q->findPath(sref, eref, sn, en, &filter, path.data(), &npath, kMaxPath);
      dtStatus ss = DT_FAILURE;
      if (dtStatusSucceed(fs) && npath > 0)
        ss = q->findStraightPath(sn, en, path.data(), npath, spath.data(), spath_flags.data(),
                                 spath_refs.data(), &nspath, kMaxPath);
      double t1 = clock_s(CLOCK_THREAD_CPUTIME_ID);
      us = (t1 - t0) * 1e6;
      times_us.push_back(us);
      cpu_total += t1 - t0;
      if (dtStatusSucceed(ss) && nspath > 0) {
        bool unreached = dtStatusDetail(fs, DT_PARTIAL_RESULT) || path[npath - 1] != eref;
        status = unreached || off_cell ? 0 : 1;
        if (unreached)
          not_reached++;
        if (unreached && dtStatusDetail(fs, DT_OUT_OF_NODES))
          out_of_nodes++;
        if (off_cell)
          off_cells++;
        pts.clear();
        len = 0;
        for (int k = 0; k < nspath; k++) {
          pts.push_back(spath[3 * k]);
          pts.push_back(spath[3 * k + 2]);
          if (k > 0)
            len += std::hypot(pts[2 * k] - pts[2 * k - 2], pts[2 * k + 1] - pts[2 * k - 1]);
        }
        clear = path_clearance(g, pts);
        clearances.push_back(clear);
        if (clear <= 0)
          crossing++;
        if (clear < o.radius)
          below_r++;
        if (status == 1 && p.optimal > 0)
          ratios.push_back(len / p.optimal);
      }
    }
    if (status == 1)
      found++;
    else if (status == 0)
      partial++;
    else
      failed++;
    if (csv) {
      std::fprintf(csv, "%zu,%d,", i, status);
      if (std::isnan(us))
        std::fprintf(csv, ",");
      else
        std::fprintf(csv, "%.3f,", us);
      if (std::isnan(len))
        std::fprintf(csv, ",");
      else
        std::fprintf(csv, "%.6f,", len);
      std::fprintf(csv, "%.6f,", p.optimal);
      if (std::isnan(clear))
        std::fprintf(csv, "\n");
      else
        std::fprintf(csv, "%.6f\n", clear);
    }
  }
  if (csv && std::fclose(csv) != 0)
    die("%s: %s", o.csv, std::strerror(errno));

  std::printf(
      "  problems found %d, partial %d (goal not reached %d, %d of them out of nodes; start or goal snapped "
      "out of its cell %d), failed %d (%d without a polygon near); %d start or goal snapped to the "
      "navmesh\n",
      found, partial, not_reached, out_of_nodes, off_cells, failed, no_poly, snapped);
  std::printf("  plan     findPath + findStraightPath, thread CPU: p50 %.1f µs, p99 %.1f µs, max %.1f µs; "
              "%.0f plans per CPU second\n",
              quantile(times_us, 0.5), quantile(times_us, 0.99), quantile(times_us, 1.0),
              cpu_total > 0 ? (double)times_us.size() / cpu_total : 0.0);
  std::printf("  length   route / optimal over %zu found problems: min %.4f, median %.4f, max %.4f\n",
              ratios.size(), quantile(ratios, 0.0), quantile(ratios, 0.5), quantile(ratios, 1.0));
  std::printf(
      "  clear    least clearance of %zu paths to blocked cells: min %.4f m, median %.4f m; %d below the "
      "radius, %d touch or cross a blocked cell\n",
      clearances.size(), quantile(clearances, 0.0), quantile(clearances, 0.5), below_r, crossing);

  dtFreeNavMeshQuery(q);
  dtFreeNavMesh(nav);
  return 0;
}
