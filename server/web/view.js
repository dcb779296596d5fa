// view.js: the live view. Speaks the game protocol (PROTOCOL.md 15) over the
// server's WebSocket: HELLO, then a VIEW of what the canvas shows; draws each
// SNAPSHOT over the map (the server's text messages, JSON); QUERY and
// /api/agent for the agent clicked; EVENTs of that agent, and the STUCK and
// UNREACHABLE of every agent in view, marked on the world and logged; each
// agent's body to scale, coloured by behaviour or owner (the agents message);
// the loop's work per tick as a graph (the ticks message); for an admin, GOTOs,
// new obstacles and doors opened and closed from the world's canvas.
"use strict";

(() => {
  const MSG = { HELLO: 1, SET_BEHAVIOUR: 4, QUERY: 8, PING: 9, VIEW: 10, ADD_OBSTACLE: 12, REMOVE_OBSTACLE: 13,
    WELCOME: 32, ACK: 33, ERROR: 34, EVENT: 35, SNAPSHOT: 36 };
  const EVENT_NAMES = ["arrived", "waypoint", "path_finished", "reversed", "spawned", "despawned", "stuck",
    "planned", "replanned", "unreachable"];
  const EVENT_STUCK = 6, EVENT_UNREACHABLE = 9;
  const MARK_MS = 5000; // how long a STUCK or UNREACHABLE ring stays on its agent
  const MARK_COLOURS = { [EVENT_STUCK]: "#ffa726", [EVENT_UNREACHABLE]: "#ef5350" };
  const VELOCITY_COLOUR = "#e040fb", SCALE_COLOUR = "#d8dee9", SELECTED_COLOUR = "#ffcc4d", OPENED_COLOUR = "#8fa1b3";
  const ROUTES_COLOUR = "#9575cd", NEIGHBOUR_COLOUR = "#26c6da";
  const ROUTES_MS = 1000; // how often the routes of the agents on the screen are fetched
  // Bodies by behaviour (the names of PROTOCOL.md 5), by owner (the server's own, then clients by id),
  // and agents whose details have not come yet.
  const BEHAVIOUR_COLOURS = {
    none: "#90a4ae", seek: "#4fc3f7", flee: "#f06292", arrive: "#4db6ac", align: "#a1887f",
    velocity_match: "#dce775", face: "#bcaaa4", look_where_going: "#80deea", pursue: "#ba68c8", evade: "#ff8a65",
    interpose: "#7986cb", wander: "#aed581", follow_path: "#64b5f6", goto: "#fff176",
  };
  // By state: from the snapshot's velocity, and the STUCK or UNREACHABLE ring it wears.
  const STATE_COLOURS = { moving: "#66bb6a", "at rest": "#b0bec5", stuck: "#ffb300", unreachable: "#e53935" };
  const MOVING_M_S = 0.05; // slower is at rest
  const OWNER_COLOURS = ["#90a4ae", "#4fc3f7", "#f06292", "#aed581", "#ffb74d", "#ba68c8", "#4db6ac", "#fff176", "#7986cb"];
  const UNKNOWN_COLOUR = "#ffffff";
  const canvas = document.getElementById("world");
  const ctx = canvas.getContext("2d");
  const statusEl = document.getElementById("status");
  const inspector = document.getElementById("inspector");
  const fieldsEl = document.getElementById("inspector-fields");
  const eventsEl = document.getElementById("events");
  const pauseBtn = document.getElementById("pause");
  const velocityBtn = document.getElementById("velocities");
  const routesBtn = document.getElementById("routes");
  const logEl = document.getElementById("log");
  const colourBtn = document.getElementById("colour");
  const legendEl = document.getElementById("legend");
  const ticksEl = document.getElementById("ticks");
  const tickCanvas = document.getElementById("tick-graph");
  const tickCaption = document.getElementById("tick-caption");
  const tickBtn = document.getElementById("tick-toggle");

  const params = new URLSearchParams(location.search);
  let token = params.get("token") || sessionStorage.getItem("steerd-token") || "";
  let ws = null, nextRequest = 1, welcome = null, paused = false;
  let pausedAt = 0; // the picture's time while paused: rings neither come nor go
  let agents = new Map();        // id -> {x, y, theta, vx, vy, at}: the last complete snapshot
  let building = null;           // the snapshot whose parts are arriving
  let lastTick = 0, frames = 0, fps = 0, fpsAt = performance.now();
  let selected = 0, detail = null, detailTimer = 0;
  let map = null;                 // the obstacles: the last map message (PROTOCOL.md 15)
  let moved = false;              // the user panned or zoomed: a new map does not refit
  let fitPending = 0;             // fit the camera to the snapshot this many frames on (a whole-world one)
  let showVelocities = false;
  let routes = null, routesTimer = 0; // the routes toggle: /api/routes of the agents on the screen
  let details = new Map();        // id -> {r, behaviour, owner}: the last agents message
  let colourBy = "behaviour";     // or "owner", or "state"
  let legendKey = "";
  const marks = new Map();        // id -> {code, at, until}: agents recently STUCK or UNREACHABLE
  let scaleBar = null;            // what drawScale drew last, for tests
  // The tick graph: the loop's work in each tick's period by phase (the ticks message).
  const TICK_GRAPH_BARS = 128, TICK_BAR_PX = 3;
  const PHASE_COLOURS = ["#42a5f5", "#66bb6a", "#ab47bc", "#ffa000", "#ec407a", "#8d6e63"];
  const INTERVAL_COLOUR = "#d8dee9";
  let tickLog = [];               // [{tick, us: [per phase]}], oldest first
  let tickPhases = [], tickInterval = 0;
  let tickGraph = null;           // what drawTicks drew last, for tests
  // An admin's actions: a mode for clicks and drags on the world, the obstacles this page removed
  // (doors opened: drawn dashed, a click puts one back) and the replies to what it sent.
  const adminEl = document.getElementById("admin");
  const adminStatus = document.getElementById("admin-status");
  const modeBtns = { goto: document.getElementById("mode-goto"), obstacle: document.getElementById("mode-obstacle"),
    door: document.getElementById("mode-door") };
  let role = "", mode = "";
  const opened = new Map();      // id -> the obstacle as the map message had it
  const pending = new Map();     // request id -> what was sent, until its ACK or ERROR
  const adminLog = [];           // [{what, ok, code, message, field}], oldest first
  // Camera: world point at the canvas centre and pixels per metre.
  const cam = { x: 0, y: 0, scale: 4 };

  // The request id it went with, 0 when the socket is not open.
  function send(type, body) {
    if (!ws || ws.readyState !== WebSocket.OPEN) return 0;
    const id = nextRequest++;
    ws.send(MsgPack.encode([type, id, body]));
    return id;
  }

  function connect() {
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/";
    ws = new WebSocket(url, "steerd-view");
    ws.binaryType = "arraybuffer";
    ws.onopen = () => {
      const hello = { version: 1, name: "live-view" };
      if (token) hello.token = token;
      send(MSG.HELLO, hello);
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data === "string") {
        onText(ev.data);
        return;
      }
      let msg;
      try {
        msg = MsgPack.decode(new Uint8Array(ev.data));
      } catch (e) {
        statusEl.textContent = "bad message: " + e.message;
        return;
      }
      onMessage(msg);
    };
    ws.onclose = () => {
      statusEl.textContent = "disconnected; retrying…";
      welcome = null;
      setTimeout(connect, 2000);
    };
  }

  function onMessage(m) {
    switch (m[0]) {
      case MSG.WELCOME: {
        const w = m[2].world; // [min_x, min_y, max_x, max_y]
        welcome = { ...m[2], world_min: [w[0], w[1]], world_max: [w[2], w[3]] };
        fitEverything();
        break;
      }
      case MSG.SNAPSHOT:
        onSnapshot(m);
        break;
      case MSG.ACK:
        if (m[2] === MSG.QUERY && m[3].agent === selected) showReport(m[3]);
        adminReply(m[1], null);
        break;
      case MSG.EVENT: // [35, tick, code, agent, data]
        if (m[3] === selected) addEvent(eventsEl, m[1], m[2], m[4]);
        if (m[2] === EVENT_STUCK || m[2] === EVENT_UNREACHABLE) {
          const at = performance.now();
          if (!paused || !marks.has(m[3])) marks.set(m[3], { code: m[2], at, until: at + MARK_MS }); // a shown ring stays while paused
          addEvent(logEl, m[1], m[2], m[4], m[3]);
        }
        break;
      case MSG.ERROR: // [34, request_id, code, message, field]
        if (m[2] === 15 || m[2] === 16) askToken(m[3]);
        else if (!adminReply(m[1], { code: m[2], message: m[3], field: m[4] })) statusEl.textContent = "error " + m[2] + ": " + m[3];
        break;
    }
  }

  // [36, tick, server_time_us, part_index, part_count, agent_total, [id, x, y, theta, vx, vy, ...]]
  function onSnapshot(m) {
    const [, tick, , part, parts, , flat] = m;
    if (tick < lastTick) return;
    if (!building || building.tick !== tick) building = { tick, parts, seen: new Set(), agents: new Map() };
    if (building.seen.has(part)) return;
    building.seen.add(part);
    const now = performance.now();
    for (let i = 0; i + 5 < flat.length; i += 6) {
      building.agents.set(flat[i], {
        x: flat[i + 1] / 100, y: flat[i + 2] / 100, theta: (flat[i + 3] * Math.PI) / 32768,
        vx: flat[i + 4] / 100, vy: flat[i + 5] / 100, at: now,
      });
    }
    if (building.seen.size === building.parts) {
      lastTick = tick;
      frames++;
      if (!paused) agents = building.agents;
      building = null;
      if (fitPending && --fitPending === 0 && !moved) fitAgents(true);
    }
  }

  function askToken(why) {
    statusEl.textContent = why;
    const form = document.getElementById("token");
    form.style.display = "block";
    form.onsubmit = (e) => {
      e.preventDefault();
      token = document.getElementById("token-input").value.trim();
      sessionStorage.setItem("steerd-token", token);
      form.style.display = "none";
      if (ws) ws.close();
    };
  }

  // {"type": "map", "version", "bounds_m", "obstacles"}: after WELCOME and after every change;
  // a map too large for one message comes as {"type": "map", "version", "href"} to fetch.
  function onText(text) {
    let m;
    try {
      m = JSON.parse(text);
    } catch (e) {
      statusEl.textContent = "bad message: " + e.message;
      return;
    }
    if (m.type === "agents") {
      if (paused) return; // the picture stands still: colours too (the next one comes within a second)
      details = new Map(m.agents.map(([id, r, behaviour, owner]) => [id, { r, behaviour, owner }]));
      return;
    }
    if (m.type === "session") {
      role = m.role;
      adminEl.style.display = role === "admin" ? "" : "none";
      return;
    }
    if (m.type === "ticks") {
      if (!paused) addTicks(m);
      return;
    }
    if (m.type !== "map") return;
    if (m.href) {
      fetch(m.href + (token ? "?token=" + encodeURIComponent(token) : "")).then((r) => (r.ok ? r.json() : null))
        .then((full) => { if (full && full.version === m.version) setMap(full); }).catch(() => {});
    } else {
      setMap(m);
    }
  }

  // {"type": "ticks", "interval_ms", "phases", "ticks": [[tick, us per phase...], ...]}
  function addTicks(m) {
    tickPhases = m.phases;
    tickInterval = m.interval_ms;
    const last = tickLog.length ? tickLog[tickLog.length - 1].tick : -1;
    for (const [tick, ...us] of m.ticks) if (tick > last) tickLog.push({ tick, us });
    if (tickLog.length > TICK_GRAPH_BARS) tickLog = tickLog.slice(-TICK_GRAPH_BARS);
    drawTicks();
  }

  // Stacked bars, newest on the right, scaled to 1.25 times the largest (at least 1 ms), the
  // interval as a line when it is within the scale; the caption names the phases and the figures.
  function drawTicks() {
    const g = tickCanvas.getContext("2d"), W = tickCanvas.width, H = tickCanvas.height;
    g.clearRect(0, 0, W, H);
    const totals = tickLog.map((t) => t.us.reduce((a, b) => a + b, 0) / 1000);
    const most = Math.max(0, ...totals), top = Math.max(1, 1.25 * most);
    const x0 = W - tickLog.length * TICK_BAR_PX;
    tickLog.forEach((t, i) => {
      let below = 0, sum = 0;
      for (let p = 0; p < t.us.length; p++) {
        sum += t.us[p] / 1000;
        // Cumulative rounding, so the stack's height is its total's (a bar of any work is 1 px or more).
        const upto = sum > 0 ? Math.max(1, Math.round((sum / top) * H)) : 0;
        if (upto > below) {
          g.fillStyle = PHASE_COLOURS[p % PHASE_COLOURS.length];
          g.fillRect(x0 + i * TICK_BAR_PX, H - upto, TICK_BAR_PX - 1, upto - below);
        }
        below = upto;
      }
    });
    const intervalY = tickInterval <= top ? H - Math.round((tickInterval / top) * H) : null;
    if (intervalY !== null) {
      g.fillStyle = INTERVAL_COLOUR;
      g.fillRect(0, Math.max(0, intervalY), W, 1);
    }
    const sorted = [...totals].sort((a, b) => a - b);
    const p50 = sorted.length ? sorted[Math.floor(sorted.length / 2)] : 0;
    tickCaption.textContent = "tick work p50 " + p50.toFixed(2) + " ms · max " + most.toFixed(2) + " ms of " +
      tickInterval.toFixed(1) + " ms";
    tickCaption.append(document.createElement("br"));
    tickPhases.forEach((name, p) => {
      const sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.background = PHASE_COLOURS[p % PHASE_COLOURS.length];
      tickCaption.append(sw, name);
    });
    tickGraph = { bars: tickLog.length, x0, top_ms: top, most_ms: most, interval_y: intervalY, width: W, height: H };
  }

  function setMap(m) {
    const first = !map;
    map = m;
    for (const o of m.obstacles) opened.delete(o.id); // put back, by this page or another
    if (first && !moved) fitEverything();
  }

  // ---- camera and VIEW ----

  function resize() {
    canvas.width = canvas.clientWidth * devicePixelRatio;
    canvas.height = canvas.clientHeight * devicePixelRatio;
  }

  // "Fit everything": ask for the whole world, then fit the agents of a
  // snapshot made after the VIEW (the third on: those queued before it hold
  // the old view) and the map's obstacles, within the world's bounds.
  // Meanwhile the camera fits what the page has (it keeps the VIEW "all").
  function fitEverything() {
    if (!welcome) return;
    fitPending = 3;
    fitAgents(false);
    clearTimeout(viewTimer);
    send(MSG.VIEW, { all: true });
  }

  function fitAgents(view) {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    const take = (x, y, r) => {
      x0 = Math.min(x0, x - r), x1 = Math.max(x1, x + r);
      y0 = Math.min(y0, y - r), y1 = Math.max(y1, y + r);
    };
    for (const a of agents.values()) take(a.x, a.y, 2);
    for (const o of map ? map.obstacles : []) {
      const r = o.kind === "circle" ? o.radius_m : 0;
      for (const [x, y] of o.points_m) take(x, y, r);
    }
    if (x0 > x1) [x0, y0, x1, y1] = [-60, -60, 60, 60];
    const [minx, miny] = welcome.world_min, [maxx, maxy] = welcome.world_max;
    x0 = Math.max(x0, minx), y0 = Math.max(y0, miny), x1 = Math.min(x1, maxx), y1 = Math.min(y1, maxy);
    cam.x = (x0 + x1) / 2;
    cam.y = (y0 + y1) / 2;
    cam.scale = Math.min(canvas.width / Math.max(x1 - x0, 1), canvas.height / Math.max(y1 - y0, 1)) * 0.95;
    if (view) sendView();
  }

  let viewTimer = 0;
  function sendView() {
    clearTimeout(viewTimer);
    viewTimer = setTimeout(() => {
      if (!welcome) return;
      const halfW = canvas.width / 2 / cam.scale, halfH = canvas.height / 2 / cam.scale;
      const [minx, miny] = welcome.world_min, [maxx, maxy] = welcome.world_max;
      const all = cam.x - halfW <= minx && cam.x + halfW >= maxx && cam.y - halfH <= miny && cam.y + halfH >= maxy;
      send(MSG.VIEW, all ? { all: true } : { centre: [cam.x, cam.y], radius: Math.hypot(halfW, halfH) });
    }, 100);
  }

  const toScreen = (x, y) => [canvas.width / 2 + (x - cam.x) * cam.scale, canvas.height / 2 - (y - cam.y) * cam.scale];
  const toWorld = (sx, sy) => [cam.x + (sx - canvas.width / 2) / cam.scale, cam.y - (sy - canvas.height / 2) / cam.scale];

  let drag = null;
  canvas.addEventListener("mousedown", (e) => {
    drag = { x: e.clientX, y: e.clientY, moved: false, from: [e.clientX, e.clientY], to: [e.clientX, e.clientY] };
  });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const dx = (e.clientX - drag.x) * devicePixelRatio, dy = (e.clientY - drag.y) * devicePixelRatio;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    if (!drag.moved) return;
    if (mode === "obstacle") { // the drag draws the rectangle instead of panning
      drag.to = [e.clientX, e.clientY];
      return;
    }
    cam.x -= dx / cam.scale;
    cam.y += dy / cam.scale;
    moved = true;
    drag.x = e.clientX;
    drag.y = e.clientY;
    sendView();
  });
  window.addEventListener("mouseup", (e) => {
    const d = drag;
    drag = null;
    if (!d) return;
    const sx = e.clientX * devicePixelRatio, sy = e.clientY * devicePixelRatio;
    if (mode === "obstacle" && d.moved) addRectangle(d.from, [e.clientX, e.clientY]);
    else if (!d.moved && mode === "goto" && !nearest(sx, sy)) sendGoto(toWorld(sx, sy));
    else if (!d.moved && mode === "door") toggleDoor(toWorld(sx, sy));
    else if (!d.moved) pick(sx, sy);
  });
  for (const [name, btn] of Object.entries(modeBtns))
    btn.addEventListener("click", () => {
      mode = mode === name ? "" : name;
      for (const [n, b] of Object.entries(modeBtns)) b.classList.toggle("on", mode === n);
    });
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const [wx, wy] = toWorld(e.clientX * devicePixelRatio, e.clientY * devicePixelRatio);
    cam.scale *= Math.exp(-e.deltaY * 0.0015);
    cam.scale = Math.max(0.05, Math.min(200, cam.scale));
    const [nx, ny] = toWorld(e.clientX * devicePixelRatio, e.clientY * devicePixelRatio);
    cam.x += wx - nx;
    cam.y += wy - ny;
    moved = true;
    sendView();
  }, { passive: false });
  pauseBtn.addEventListener("click", () => {
    paused = !paused;
    pausedAt = performance.now();
    pauseBtn.textContent = paused ? "resume" : "pause";
  });
  document.getElementById("fit").addEventListener("click", () => {
    moved = false;
    fitEverything();
  });
  colourBtn.addEventListener("click", () => {
    colourBy = colourBy === "behaviour" ? "owner" : colourBy === "owner" ? "state" : "behaviour";
    colourBtn.textContent = "colour: " + colourBy;
  });
  // Hovering an agent names it (the canvas' tooltip).
  canvas.addEventListener("mousemove", (e) => {
    if (drag && drag.moved) return;
    const id = nearest(e.clientX * devicePixelRatio, e.clientY * devicePixelRatio);
    const d = details.get(id);
    canvas.title = id ? "agent " + id + (d ? " · " + d.behaviour + " · " + ownerName(d.owner) + " · radius " +
      d.r + " m" : "") : "";
  });
  tickBtn.addEventListener("click", () => {
    const shown = ticksEl.style.display === "none";
    ticksEl.style.display = shown ? "" : "none";
    tickBtn.classList.toggle("on", shown);
  });
  // Every agent's route on the screen: fetched for the circle round the screen, at most 100 agents,
  // nearest its centre first. Paused, they stand still.
  function fetchRoutes() {
    if (paused) return;
    const r = Math.hypot(canvas.width, canvas.height) / 2 / cam.scale;
    const q = "x=" + cam.x.toFixed(2) + "&y=" + cam.y.toFixed(2) + "&r=" + r.toFixed(2) +
      (token ? "&token=" + encodeURIComponent(token) : "");
    fetch("/api/routes?" + q).then((res) => (res.ok ? res.json() : null)).then((j) => {
      if (j && routesTimer && !paused) routes = j.agents;
    }).catch(() => {});
  }
  routesBtn.addEventListener("click", () => {
    clearInterval(routesTimer);
    routesTimer = 0;
    routes = null;
    if (!routesBtn.classList.toggle("on")) return;
    fetchRoutes();
    routesTimer = setInterval(fetchRoutes, ROUTES_MS);
  });
  velocityBtn.addEventListener("click", () => {
    showVelocities = !showVelocities;
    velocityBtn.classList.toggle("on", showVelocities);
  });

  // ---- an admin's actions ----

  // undo: what to forget if the server refuses it.
  function adminSend(type, body, what, undo = null) {
    const id = send(type, body);
    if (id) pending.set(id, { what, undo });
    adminStatus.textContent = what + " …";
  }

  // The reply to one of adminSend's commands (err null: its ACK); false for any other.
  function adminReply(id, err) {
    const sent = pending.get(id);
    if (sent === undefined) return false;
    pending.delete(id);
    const what = sent.what;
    if (err && sent.undo) sent.undo();
    adminLog.push({ what, ok: !err, ...(err || {}) });
    adminStatus.textContent = what + (err ? ": error " + err.code + ": " + err.message : ": done");
    return true;
  }

  function sendGoto([x, y]) {
    if (!selected) {
      adminStatus.textContent = "goto: click an agent first, then the ground";
      return;
    }
    adminSend(MSG.SET_BEHAVIOUR, { agent: selected, behaviour: { kind: "goto", target: [x, y] } },
      "goto " + selected + " to (" + x.toFixed(1) + ", " + y.toFixed(1) + ")");
  }

  // A new obstacle's id: past every id the page knows.
  function freeId() {
    let most = 0;
    for (const o of map ? map.obstacles : []) most = Math.max(most, o.id);
    for (const id of opened.keys()) most = Math.max(most, id);
    return most + 1;
  }

  // The rectangle between two client points, counter-clockwise in the world.
  function addRectangle(a, b) {
    const [x0, y0] = toWorld(a[0] * devicePixelRatio, a[1] * devicePixelRatio);
    const [x1, y1] = toWorld(b[0] * devicePixelRatio, b[1] * devicePixelRatio);
    const lx = Math.min(x0, x1), hx = Math.max(x0, x1), ly = Math.min(y0, y1), hy = Math.max(y0, y1);
    if (hx - lx < 0.2 || hy - ly < 0.2) {
      adminStatus.textContent = "add obstacle: drag a rectangle of 0.2 m or more each way";
      return;
    }
    const id = freeId();
    adminSend(MSG.ADD_OBSTACLE, { id, type: "polygon", points: [[lx, ly], [hx, ly], [hx, hy], [lx, hy]] },
      "add obstacle " + id);
  }

  // The topmost obstacle of the map under a world point (a wall within 6 px), or null.
  function obstacleAt(x, y, list) {
    const reach = Math.max(0.25, (6 * devicePixelRatio) / cam.scale);
    let hit = null;
    for (const o of list) {
      const p = o.points_m;
      if (o.kind === "circle") {
        if (Math.hypot(x - p[0][0], y - p[0][1]) <= o.radius_m) hit = o;
      } else if (o.kind === "polygon") {
        let inside = false;
        for (let i = 0, j = p.length - 1; i < p.length; j = i++)
          if (p[i][1] > y !== p[j][1] > y && x < ((p[j][0] - p[i][0]) * (y - p[i][1])) / (p[j][1] - p[i][1]) + p[i][0])
            inside = !inside;
        if (inside) hit = o;
      } else {
        for (let i = 1; i < p.length; i++) {
          const [ax, ay] = p[i - 1], [bx, by] = p[i], len2 = (bx - ax) ** 2 + (by - ay) ** 2;
          const t = len2 ? Math.max(0, Math.min(1, ((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / len2)) : 0;
          if (Math.hypot(x - ax - t * (bx - ax), y - ay - t * (by - ay)) <= reach) hit = o;
        }
      }
    }
    return hit;
  }

  // A door: an obstacle clicked is removed (and remembered); a removed one clicked is put back.
  function toggleDoor([x, y]) {
    const shut = map ? obstacleAt(x, y, map.obstacles) : null;
    if (shut) {
      opened.set(shut.id, shut);
      adminSend(MSG.REMOVE_OBSTACLE, { id: shut.id }, "open door " + shut.id, () => opened.delete(shut.id));
      return;
    }
    const open = obstacleAt(x, y, [...opened.values()]);
    if (!open) {
      adminStatus.textContent = "door: click an obstacle to remove it, or a dashed one to put it back";
      return;
    }
    const body = open.kind === "circle" ? { id: open.id, type: "circle", center: open.points_m[0], radius: open.radius_m }
      : { id: open.id, type: open.kind, points: open.points_m };
    adminSend(MSG.ADD_OBSTACLE, body, "close door " + open.id);
  }

  function drawAdmin() {
    ctx.save();
    ctx.setLineDash([6, 4]);
    ctx.strokeStyle = OPENED_COLOUR;
    ctx.lineWidth = 2;
    for (const o of opened.values()) {
      traceObstacle(o);
      ctx.stroke();
    }
    if (drag && drag.moved && mode === "obstacle") {
      const [ax, ay] = drag.from.map((v) => v * devicePixelRatio), [bx, by] = drag.to.map((v) => v * devicePixelRatio);
      ctx.strokeStyle = SELECTED_COLOUR;
      ctx.strokeRect(Math.min(ax, bx), Math.min(ay, by), Math.abs(bx - ax), Math.abs(by - ay));
    }
    ctx.restore();
  }

  // ---- the inspector ----

  // The agent drawn nearest a screen point, within 14 px or its body; 0 for none.
  function nearest(sx, sy) {
    let best = 0, bestD = Infinity;
    const now = performance.now();
    for (const [id, a] of agents) {
      const [px, py] = toScreen(...predict(a, now));
      const d = Math.hypot(px - sx, py - sy), d0 = details.get(id);
      const reach = Math.max(14 * devicePixelRatio, d0 ? d0.r * cam.scale : 0);
      if (d < reach && d < bestD) (best = id), (bestD = d);
    }
    return best;
  }

  function pick(sx, sy) {
    select(nearest(sx, sy));
  }

  const ownerName = (o) => (o === 0 ? "server" : "client " + o);

  // An agent's colour and legend entry by the current choice.
  function colourOf(id) {
    if (colourBy === "state") {
      const a = agents.get(id), mark = marks.get(id), t = paused ? pausedAt : performance.now();
      const state = mark && mark.at <= t && mark.until > t ? (mark.code === EVENT_STUCK ? "stuck" : "unreachable")
        : a && Math.hypot(a.vx, a.vy) > MOVING_M_S ? "moving" : "at rest";
      return [STATE_COLOURS[state], state];
    }
    const d = details.get(id);
    if (!d) return [UNKNOWN_COLOUR, "not known yet"];
    if (colourBy === "owner") return [OWNER_COLOURS[d.owner === 0 ? 0 : 1 + ((d.owner - 1) % (OWNER_COLOURS.length - 1))], ownerName(d.owner)];
    return [BEHAVIOUR_COLOURS[d.behaviour] || UNKNOWN_COLOUR, d.behaviour];
  }

  // What each colour on the screen means, with how many agents show it.
  function drawLegend(counts) {
    const rows = [...counts].sort((a, b) => b[1].n - a[1].n || (a[0] < b[0] ? -1 : 1));
    const key = colourBy + JSON.stringify(rows);
    if (key === legendKey) return;
    legendKey = key;
    legendEl.textContent = "";
    for (const [name, { colour, n }] of rows) {
      const li = document.createElement("li");
      const sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.background = colour;
      li.append(sw, name + " " + n);
      li.dataset.name = name;
      li.dataset.count = String(n);
      li.dataset.colour = colour;
      legendEl.append(li);
    }
  }

  function select(id) {
    selected = id;
    detail = null;
    eventsEl.textContent = "";
    clearInterval(detailTimer);
    if (!id) {
      inspector.style.display = "none";
      return;
    }
    document.getElementById("inspector-id").textContent = String(id);
    inspector.style.display = "block";
    const refresh = () => {
      send(MSG.QUERY, { agent: id });
      const q = "id=" + id + (token ? "&token=" + encodeURIComponent(token) : "");
      fetch("/api/agent?" + q).then((r) => (r.ok ? r.json() : null)).then((d) => {
        // Paused, the drawn route and target stand still too: only the first comes in.
        if (selected === id && (!paused || !detail)) detail = d;
      }).catch(() => {});
    };
    refresh();
    detailTimer = setInterval(refresh, 500);
  }

  function showReport(r) {
    const f = (v) => (typeof v === "number" ? v.toFixed(2) : String(v));
    const rows = [
      ["behaviour", r.behaviour + (r.path_node !== null && r.path_node !== undefined ? " (node " + r.path_node + ")" : "")],
      ["model", r.model], ["owner", r.owner === 0 ? "server" : "client " + r.owner],
      ["position", f(r.x) + ", " + f(r.y) + " m"], ["velocity", f(r.vx) + ", " + f(r.vy) + " m/s"],
      ["heading", f((r.orientation * 180) / Math.PI) + "°"], ["arrived", String(r.arrived)],
      ["max speed", f(r.limits.max_speed) + " m/s"], ["tick", String(r.tick)],
    ];
    if (detail && detail.id === r.agent && detail.owner_name) rows[2][1] += " (" + detail.owner_name + ")";
    if (detail && detail.id === r.agent && detail.neighbours)
      rows.push(["neighbours", detail.neighbours.length + " within " + f(detail.neighbour_reach_m) + " m (separation " +
        f(detail.separation_weight) + ", avoidance " + f(detail.avoid_weight) + ")"]);
    fieldsEl.textContent = "";
    for (const [k, v] of rows) {
      const tr = fieldsEl.insertRow();
      tr.insertCell().textContent = k;
      tr.insertCell().textContent = v;
    }
  }

  // The newest first, at most 50 (the world's log: 8).
  function addEvent(list, tick, code, data, agent) {
    const li = document.createElement("li");
    li.textContent = "tick " + tick + ": " + (agent ? "agent " + agent + " " : "") + (EVENT_NAMES[code] || code) +
      (data ? " " + data : "");
    list.prepend(li);
    while (list.childElementCount > (list === logEl ? 8 : 50)) list.lastChild.remove();
  }

  // ---- drawing ----

  // Where the agent is now, carried forward from its snapshot by its velocity (at most 0.25 s).
  function predict(a, now) {
    const dt = paused ? 0 : Math.min((now - a.at) / 1000, 0.25);
    return [a.x + a.vx * dt, a.y + a.vy * dt];
  }

  function draw(now) {
    ctx.fillStyle = "#10151c";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    drawGrid();
    if (welcome) {
      const [x0, y0] = toScreen(welcome.world_min[0], welcome.world_max[1]);
      const [x1, y1] = toScreen(welcome.world_max[0], welcome.world_min[1]);
      ctx.strokeStyle = "#3b4b5e";
      ctx.lineWidth = 2;
      ctx.strokeRect(x0, y0, x1 - x0, y1 - y0);
    }
    if (map) drawMap(map);
    drawAdmin();
    if (routes) drawRoutes(routes);
    if (detail) drawDetail(detail);
    if (detail && detail.neighbours) drawNeighbours(detail, now);
    const r = Math.max(6, 0.6 * cam.scale);
    const counts = new Map();
    let inView = 0;
    for (const [id, a] of agents) {
      const [px, py] = toScreen(...predict(a, now));
      if (px < -r || py < -r || px > canvas.width + r || py > canvas.height + r) continue;
      inView++;
      if (showVelocities) {
        ctx.strokeStyle = VELOCITY_COLOUR;
        ctx.lineWidth = 2;
        ctx.beginPath();
        ctx.moveTo(px, py);
        ctx.lineTo(px + a.vx * cam.scale, py - a.vy * cam.scale); // where it is in a second
        ctx.stroke();
      }
      const mark = marks.get(id), shown = paused ? pausedAt : now;
      if (mark && mark.at <= shown && mark.until > shown) {
        ctx.strokeStyle = MARK_COLOURS[mark.code];
        ctx.lineWidth = 3;
        ctx.beginPath();
        ctx.arc(px, py, r * 2.2, 0, 2 * Math.PI);
        ctx.stroke();
      } else if (mark && mark.until <= shown) marks.delete(id);
      const [colour, name] = colourOf(id);
      const c = counts.get(name) || { colour, n: 0 };
      c.n++;
      counts.set(name, c);
      drawAgent(px, py, a.theta, details.get(id), id === selected ? SELECTED_COLOUR : colour, r);
    }
    drawLegend(counts);
    if (now - fpsAt > 1000) {
      fps = frames;
      frames = 0;
      fpsAt = now;
    }
    drawScale();
    if (welcome) statusEl.textContent = "tick " + lastTick + " · " + inView + " agents on screen of " + agents.size +
      " sent · " + fps + " snapshots/s" + (paused ? " · paused" : "");
    requestAnimationFrame(draw);
  }

  // The body to scale (a disc of its radius, a line to its heading) once it is
  // 5 px or more across; else an arrow of r px, so a far-off crowd stays visible.
  function drawAgent(px, py, theta, d, colour, r) {
    const body = d ? d.r * cam.scale : 0;
    ctx.save();
    ctx.translate(px, py);
    ctx.rotate(-theta);
    ctx.fillStyle = colour;
    ctx.beginPath();
    if (body >= 5) {
      ctx.arc(0, 0, body, 0, 2 * Math.PI);
      ctx.fill();
      ctx.strokeStyle = "#10151c";
      ctx.lineWidth = Math.max(1, body / 6);
      ctx.beginPath();
      ctx.moveTo(0, 0);
      ctx.lineTo(body, 0);
      ctx.stroke();
    } else {
      ctx.moveTo(r * 1.6, 0);
      ctx.lineTo(-r, r);
      ctx.lineTo(-r * 0.5, 0);
      ctx.lineTo(-r, -r);
      ctx.closePath();
      ctx.fill();
    }
    ctx.restore();
  }

  // A bar of a round length (1, 2 or 5 times a power of ten metres) of 80 to 200 pixels, bottom left.
  function drawScale() {
    const want = 120 / cam.scale;
    const p = Math.pow(10, Math.floor(Math.log10(want)));
    const metres = [1, 2, 5, 10].map((k) => k * p).find((m) => m * cam.scale >= 80) || 10 * p;
    const px = Math.round(metres * cam.scale), x = 16, y = canvas.height - 20;
    ctx.fillStyle = SCALE_COLOUR;
    ctx.fillRect(x, y, px, 4);
    ctx.fillRect(x, y - 6, 2, 10);
    ctx.fillRect(x + px - 2, y - 6, 2, 10);
    ctx.font = 12 * devicePixelRatio + "px system-ui, sans-serif";
    ctx.fillText(metres >= 1 ? metres + " m" : metres * 100 + " cm", x, y - 8);
    scaleBar = { metres, px, x, y };
  }

  // A line every 10 m (100 m when zoomed out), for a sense of scale and motion.
  function drawGrid() {
    const step = cam.scale > 2 ? 10 : 100;
    const [wx0, wy1] = toWorld(0, 0), [wx1, wy0] = toWorld(canvas.width, canvas.height);
    ctx.strokeStyle = "#1b2430";
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let x = Math.ceil(wx0 / step) * step; x <= wx1; x += step) {
      const [sx] = toScreen(x, 0);
      ctx.moveTo(sx, 0);
      ctx.lineTo(sx, canvas.height);
    }
    for (let y = Math.ceil(wy0 / step) * step; y <= wy1; y += step) {
      const [, sy] = toScreen(0, y);
      ctx.moveTo(0, sy);
      ctx.lineTo(canvas.width, sy);
    }
    ctx.stroke();
  }

  // An obstacle of the map message as the canvas' current path.
  function traceObstacle(o) {
    ctx.beginPath();
    if (o.kind === "circle") {
      const [cx, cy] = toScreen(o.points_m[0][0], o.points_m[0][1]);
      ctx.arc(cx, cy, o.radius_m * cam.scale, 0, 2 * Math.PI);
      return;
    }
    o.points_m.forEach(([x, y], i) => (i ? ctx.lineTo(...toScreen(x, y)) : ctx.moveTo(...toScreen(x, y))));
    if (o.kind === "polygon") ctx.closePath();
  }

  // Polygons filled, circles filled, walls as lines.
  function drawMap(m) {
    ctx.fillStyle = "#2b3645";
    ctx.strokeStyle = "#56657a";
    ctx.lineWidth = 2;
    for (const o of m.obstacles) {
      traceObstacle(o);
      if (o.kind !== "wall") ctx.fill();
      ctx.stroke();
    }
  }

  function drawDetail(d) {
    ctx.lineWidth = 2;
    if (d.path_m && d.path_m.length) {
      ctx.strokeStyle = "#9ccc65";
      ctx.beginPath();
      d.path_m.forEach(([x, y], i) => {
        const [px, py] = toScreen(x, y);
        if (i === 0) ctx.moveTo(px, py);
        else ctx.lineTo(px, py);
      });
      if (d.path_mode === "loop") ctx.closePath();
      ctx.stroke();
      d.path_m.forEach(([x, y], i) => {
        const [px, py] = toScreen(x, y);
        ctx.fillStyle = i === d.path_node ? "#ffcc4d" : "#9ccc65";
        ctx.fillRect(px - 3, py - 3, 6, 6);
      });
    }
    if (d.target_m) {
      const [tx, ty] = toScreen(d.target_m[0], d.target_m[1]);
      ctx.strokeStyle = "#ff7043";
      ctx.beginPath();
      ctx.arc(tx, ty, 8, 0, 2 * Math.PI);
      ctx.moveTo(tx - 12, ty);
      ctx.lineTo(tx + 12, ty);
      ctx.moveTo(tx, ty - 12);
      ctx.lineTo(tx, ty + 12);
      ctx.stroke();
    }
  }

  // Other agents' routes and targets, thin (the selected agent's is drawDetail's).
  function drawRoutes(list) {
    ctx.save();
    ctx.strokeStyle = ROUTES_COLOUR;
    ctx.lineWidth = 1.5;
    for (const r of list) {
      if (r.id === selected) continue;
      const a = agents.get(r.id);
      ctx.beginPath();
      if (r.path_m && r.path_m.length) {
        const rest = r.path_mode === "loop" || r.path_node === undefined ? r.path_m : r.path_m.slice(r.path_node);
        if (a) ctx.moveTo(...toScreen(a.x, a.y));
        rest.forEach(([x, y], i) => (i || a ? ctx.lineTo(...toScreen(x, y)) : ctx.moveTo(...toScreen(x, y))));
      } else if (r.target_m && a) {
        ctx.moveTo(...toScreen(a.x, a.y));
        ctx.lineTo(...toScreen(r.target_m[0], r.target_m[1]));
      }
      ctx.stroke();
      if (r.target_m) {
        const [tx, ty] = toScreen(r.target_m[0], r.target_m[1]);
        ctx.strokeRect(tx - 4, ty - 4, 8, 8);
      }
    }
    ctx.restore();
  }

  // The selected agent's neighbours, a line to each, inside the dashed circle they are taken from.
  function drawNeighbours(d, now) {
    const a = agents.get(selected);
    if (!a) return;
    const [sx, sy] = toScreen(...predict(a, now));
    ctx.save();
    ctx.strokeStyle = NEIGHBOUR_COLOUR;
    ctx.lineWidth = 2;
    for (const id of d.neighbours) {
      const b = agents.get(id);
      if (!b) continue;
      ctx.beginPath();
      ctx.moveTo(sx, sy);
      ctx.lineTo(...toScreen(...predict(b, now)));
      ctx.stroke();
    }
    if (d.neighbour_reach_m > 0 && (d.separation_weight > 0 || d.avoid_weight > 0)) {
      ctx.setLineDash([4, 4]);
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.arc(sx, sy, d.neighbour_reach_m * cam.scale, 0, 2 * Math.PI);
      ctx.stroke();
    }
    ctx.restore();
  }

  window.addEventListener("resize", () => {
    resize();
    sendView();
  });
  resize();
  connect();
  requestAnimationFrame(draw);
  // For tests and the curious: what is drawn, in world and screen coordinates.
  window.steerdView = {
    agents: () => [...agents].map(([id, a]) => ({ id, x: a.x, y: a.y, vx: a.vx, vy: a.vy,
      screen: toScreen(a.x, a.y).map((v) => v / devicePixelRatio) })),
    tick: () => lastTick,
    camera: () => ({ ...cam }),
    obstacles: () => (map ? map.obstacles.length : 0),
    map: () => map,
    toScreen: (x, y) => toScreen(x, y).map((v) => v / devicePixelRatio),
    toWorld: (x, y) => toWorld(x * devicePixelRatio, y * devicePixelRatio),
    world: () => (welcome ? [welcome.world_min, welcome.world_max] : null),
    scaleBar: () => (scaleBar ? { ...scaleBar } : null),
    fitting: () => fitPending > 0, // "fit everything" waits for its whole-world snapshot
    marks: () => [...marks].map(([id, m]) => ({ id, code: m.code })),
    details: () => [...details].map(([id, d]) => ({ id, ...d })),
    routeShown: () => detail !== null,
    route: () => (detail && detail.path_m ? detail.path_m.map((p) => [...p]) : null),
    neighbours: () => (detail && detail.neighbours ? [...detail.neighbours] : null),
    routes: () => (routes ? routes.map((r) => ({ ...r })) : null), // the selected agent's /api/agent has come and is drawn
    colourOf: (id) => colourOf(id)[0],
    colours: () => [...new Set([...Object.values(BEHAVIOUR_COLOURS), ...OWNER_COLOURS, ...Object.values(STATE_COLOURS),
      UNKNOWN_COLOUR])],
    stateColours: () => ({ ...STATE_COLOURS }),
    role: () => role,
    mode: () => mode,
    adminLog: () => adminLog.map((e) => ({ ...e })),
    opened: () => [...opened.keys()],
    ticks: () => tickLog.map((t) => ({ tick: t.tick, us: [...t.us] })),
    tickPhases: () => [...tickPhases],
    tickGraph: () => (tickGraph ? { ...tickGraph } : null),
    phaseColours: () => [...PHASE_COLOURS],
    legend: () => [...legendEl.children].map((li) => ({ name: li.dataset.name, count: Number(li.dataset.count), colour: li.dataset.colour })),
  };
})();
