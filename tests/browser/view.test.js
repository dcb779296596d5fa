// view.test.js: the live view in a real browser. Starts the real server (demo
// world, ephemeral game and HTTP ports), opens http://127.0.0.1:PORT/ in
// Debian's headless Chromium through playwright-core, and checks from the
// screenshots' pixels that agents are drawn and move; that the map (the demo's
// level) comes over the WebSocket and is drawn under them; that pan and zoom send
// a VIEW (fewer agents arrive); that clicking an agent shows its id in the
// inspector; that pause freezes the picture; that "fit everything" brings every
// agent on screen; the scale bar's length; the velocity toggle; bodies drawn to
// scale in their behaviour's colour, then their owner's, named on hover, with a
// legend; that an agent
// sent to an unreachable point is ringed and logged by name; and that a server
// with a secret wants an observer token.
//   node tests/browser/view.test.js path/to/steerd path/to/steerd-client [screenshot.png]
"use strict";

const { spawn, execFileSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");
const zlib = require("zlib");
const { chromium } = require("playwright-core");

const STEERD = process.argv[2];
const CLIENT = process.argv[3];
const SHOT = process.argv[4]; // optional: where to keep a screenshot of the demo world (docs/webview.png)
let AGENT_RGBS = [[0x4f, 0xc3, 0xf7]]; // the colours view.js draws agents in (window.steerdView.colours())
const OBSTACLE_RGB = [0x2b, 0x36, 0x45]; // and fills obstacles with #2b3645
const VELOCITY_RGB = [0xe0, 0x40, 0xfb]; // velocity vectors #e040fb
const SCALE_RGB = [0xd8, 0xde, 0xe9]; // the scale bar #d8dee9
const UNREACHABLE_RGB = [0xef, 0x53, 0x50]; // the ring of an agent UNREACHABLE #ef5350
const ROUTE_RGBS = [[0x9c, 0xcc, 0x65], [0xff, 0xcc, 0x4d]]; // a route's nodes #9ccc65, the one aimed at #ffcc4d
const OPENED_RGB = [0x8f, 0xa1, 0xb3]; // an obstacle the page removed (a door opened), dashed #8fa1b3
const ROUTES_RGB = [0x95, 0x75, 0xcd]; // other agents' routes and targets #9575cd
const NEIGHBOUR_RGB = [0x26, 0xc6, 0xda]; // the selected agent's neighbours #26c6da
const CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

function check(cond, what) {
  if (!cond) throw new Error("FAILED: " + what);
  console.log("ok - " + what);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- the server ----

function startServer(env) {
  return new Promise((resolve, reject) => {
    const proc = spawn(STEERD, ["--bind", "127.0.0.1", "--port", "0", "--http-port", "auto"], {
      env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"],
    });
    let log = "";
    const timer = setTimeout(() => reject(new Error("steerd did not open its HTTP port in 10 s:\n" + log)), 10000);
    proc.stderr.on("data", (d) => {
      log += d;
      const m = /http on 127\.0\.0\.1:(\d+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        const game = /listening on 127\.0\.0\.1:(\d+) \(udp\)/.exec(log);
      resolve({ proc, port: Number(m[1]), gamePort: game ? Number(game[1]) : 0, log: () => log });
      }
    });
    proc.on("exit", (code) => reject(new Error("steerd exited with " + code + ":\n" + log)));
  });
}

function stopServer(s) {
  return new Promise((resolve) => {
    s.proc.removeAllListeners("exit");
    s.proc.on("exit", resolve);
    s.proc.kill("SIGTERM");
  });
}

// ---- PNG pixels (8-bit RGB or RGBA, not interlaced: what Chromium writes) ----

function decodePng(buf) {
  let pos = 8, width = 0, height = 0, channels = 0;
  const idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos), type = buf.toString("ascii", pos + 4, pos + 8);
    const data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      if (data[8] !== 8 || data[12] !== 0) throw new Error("PNG: not 8-bit non-interlaced");
      channels = { 2: 3, 6: 4 }[data[9]];
      if (!channels) throw new Error("PNG: colour type " + data[9]);
    } else if (type === "IDAT") idat.push(data);
    pos += 12 + len;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels, out = Buffer.alloc(width * height * 3);
  let prev = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)], line = Buffer.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? line[i - channels] : 0, b = prev[i], c = i >= channels ? prev[i - channels] : 0;
      let p = 0;
      if (f === 1) p = a;
      else if (f === 2) p = b;
      else if (f === 3) p = (a + b) >> 1;
      else if (f === 4) {
        const pa = Math.abs(b - c), pb = Math.abs(a - c), pc = Math.abs(a + b - 2 * c);
        p = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      line[i] = (line[i] + p) & 0xff;
    }
    for (let x = 0; x < width; x++)
      for (let k = 0; k < 3; k++) out[(y * width + x) * 3 + k] = line[x * channels + k];
    prev = line;
  }
  return { width, height, rgb: out };
}

// The set of pixels in a colour (the agents' by default), as indices; `skip` a rectangle
// {x, y, width, height} of the page not looked at, or a list of them (the bar's buttons and
// text, whose anti-aliased edges pass for the grey of agents at rest).
function agentPixels(png, rgb = null, skip = null) {
  const set = new Set(), rgbs = rgb ? [rgb] : AGENT_RGBS, skips = skip ? [].concat(skip) : [];
  for (let i = 0; i < png.width * png.height; i++) {
    const x = i % png.width, y = Math.floor(i / png.width);
    if (skips.some((r) => x >= r.x && x <= r.x + r.width && y >= r.y && y <= r.y + r.height)) continue;
    for (const c of rgbs) {
      const d = Math.abs(png.rgb[i * 3] - c[0]) + Math.abs(png.rgb[i * 3 + 1] - c[1]) + Math.abs(png.rgb[i * 3 + 2] - c[2]);
      if (d < 40) {
        set.add(i);
        break;
      }
    }
  }
  return set;
}

// The page's panels (the bar, the inspector) as rectangles for agentPixels to skip.
const panels = (page) => page.evaluate(() => ["bar", "inspector", "ticks"].map((id) => {
  const r = document.getElementById(id).getBoundingClientRect();
  return { x: r.x, y: r.y, width: r.width, height: r.height };
}));

const hexRgb = (h) => [1, 3, 5].map((k) => parseInt(h.slice(k, k + 2), 16));

// Pixels within r + 2 of (x, y) in colour rgb (within 40).
function discPixels(png, x, y, r, rgb) {
  let n = 0;
  const R = Math.ceil(r + 2);
  for (let dy = -R; dy <= R; dy++)
    for (let dx = -R; dx <= R; dx++) {
      if (dx * dx + dy * dy > (r + 2) * (r + 2)) continue;
      const px = Math.round(x) + dx, py = Math.round(y) + dy, i = (py * png.width + px) * 3;
      if (px < 0 || py < 0 || px >= png.width || py >= png.height) continue;
      n += Math.abs(png.rgb[i] - rgb[0]) + Math.abs(png.rgb[i + 1] - rgb[1]) + Math.abs(png.rgb[i + 2] - rgb[2]) < 40;
    }
  return n;
}

// steerd-client's shell on the game port: sends `lines`, resolves with what it printed
// once `until` matches it.
function clientShell(port, lines, until) {
  return new Promise((resolve, reject) => {
    const proc = spawn(CLIENT, ["--port", String(port), "shell"], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "", err = "";
    const timer = setTimeout(() => {
      proc.kill();
      reject(new Error("steerd-client shell: no " + until + " in 15 s:\n" + out + err));
    }, 15000);
    proc.stdout.on("data", (d) => {
      out += d;
      if (until.test(out)) {
        clearTimeout(timer);
        proc.stdin.end();
        resolve(out);
      }
    });
    proc.stderr.on("data", (d) => (err += d));
    proc.stdin.write(lines.join("\n") + "\n");
  });
}

// Pixels of a 5 x 5 patch round (x, y) within 30 (sum of channel differences) of rgb.
function patchMatches(png, x, y, rgb) {
  let n = 0;
  for (let dy = -2; dy <= 2; dy++)
    for (let dx = -2; dx <= 2; dx++) {
      const i = ((Math.round(y) + dy) * png.width + Math.round(x) + dx) * 3;
      const d = Math.abs(png.rgb[i] - rgb[0]) + Math.abs(png.rgb[i + 1] - rgb[1]) + Math.abs(png.rgb[i + 2] - rgb[2]);
      if (d < 30) n++;
    }
  return n;
}

const difference = (a, b) => [...a].filter((i) => !b.has(i)).length + [...b].filter((i) => !a.has(i)).length;

async function waitFor(page, fn, what, timeout = 20000, arg = null) {
  try {
    await page.waitForFunction(fn, arg, { timeout });
  } catch (e) {
    throw new Error("FAILED: " + what + " within " + timeout + " ms");
  }
  console.log("ok - " + what);
}

async function main() {
  check(fs.existsSync(STEERD), "the server binary " + STEERD + " exists");
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "steerd-chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium", headless: true, args: CHROMIUM_FLAGS,
    viewport: { width: 1000, height: 700 }, deviceScaleFactor: 1,
  });
  let server = await startServer({});
  try {
    const page = browser.pages()[0] || (await browser.newPage());
    page.on("pageerror", (e) => console.log("# page error: " + e.message));
    // The map must come over the WebSocket: the page may not fetch it.
    let mapFetches = 0;
    await page.route("**/api/map*", (route) => {
      mapFetches++;
      return route.abort();
    });
    await page.goto("http://127.0.0.1:" + server.port + "/");
    await waitFor(page, () => window.steerdView && window.steerdView.agents().length >= 20, "the demo world's agents arrive");
    await waitFor(page, () => window.steerdView.obstacles() >= 20, "the demo's level arrives over the WebSocket", 10000);
    check(mapFetches === 0, "without fetching /api/map");
    await waitFor(page, () => !window.steerdView.fitting(), "the camera fits the world", 10000);
    AGENT_RGBS = (await page.evaluate(() => window.steerdView.colours())).map(hexRgb);
    // The agents message: every agent's body radius, behaviour and owner, once a second.
    await waitFor(page, () => window.steerdView.details().length >= 20 && window.steerdView.details().every((d) =>
      d.r > 0 && typeof d.behaviour === "string" && d.owner === 0), "each agent's radius, behaviour and owner arrive", 10000);
    await waitFor(page, () => window.steerdView.legend().length >= 2, "the legend lists the behaviours on the screen", 5000);
    {
      const [all, details] = await page.evaluate(() => [window.steerdView.legend(), window.steerdView.details()]);
      const legend = all.filter((e) => e.name !== "not known yet"); // spawned since the last agents message
      const names = new Set(details.map((d) => d.behaviour));
      check(legend.every((e) => names.has(e.name) && e.count > 0),
        "the legend's entries are the agents' behaviours (" + legend.map((e) => e.name + " " + e.count).join(", ") + ")");
      const colours = await page.evaluate((ns) => ns.map((n) => {
        const d = window.steerdView.details().find((x) => x.behaviour === n);
        return d ? window.steerdView.colourOf(d.id) : "";
      }), legend.map((e) => e.name));
      check(legend.every((e, i) => e.colour === colours[i]) && new Set(colours).size === colours.length,
        "each behaviour has its own colour, the legend's");
    }

    // The tick graph: the loop's work in each tick's period (the ticks message), a stacked bar
    // per tick in the phases' colours, as tall as its total at the graph's scale.
    {
      await waitFor(page, () => window.steerdView.ticks().length >= 40, "the ticks messages fill the tick graph", 10000);
      const t = await page.evaluate(() => {
        const c = document.getElementById("tick-graph");
        return { ticks: window.steerdView.ticks(), phases: window.steerdView.tickPhases(), graph: window.steerdView.tickGraph(),
          colours: window.steerdView.phaseColours(), caption: document.getElementById("tick-caption").textContent,
          rgba: Array.from(c.getContext("2d").getImageData(0, 0, c.width, c.height).data) };
      });
      check(JSON.stringify(t.phases) === '["step","commands","enet","send","checkpoint","http"]',
        "the ticks message names the loop's phases (" + t.phases.join(", ") + ")");
      const steps = t.ticks.slice(1).map((e, i) => e.tick - t.ticks[i].tick);
      check(steps.every((d) => d >= 1) && steps.filter((d) => d === 1).length >= 0.9 * steps.length &&
        t.ticks.every((e) => e.us.length === 6 && e.us.every((u) => Number.isInteger(u) && u >= 0)),
        "one entry a tick, in order, " + t.ticks.length + " of them (" + t.ticks[0].tick + ".." + t.ticks[t.ticks.length - 1].tick + ")");
      check(t.ticks.filter((e) => e.us[0] > 0).length >= 0.9 * t.ticks.length, "each tick's step takes time");
      const rgbs = t.colours.map(hexRgb), H = t.graph.height;
      const phaseAt = (x, y) => {
        const i = (y * t.graph.width + x) * 4;
        return t.rgba[i + 3] === 0 ? -1 : rgbs.findIndex((c) => c[0] === t.rgba[i] && c[1] === t.rgba[i + 1] && c[2] === t.rgba[i + 2]);
      };
      let right = 0, stepPixels = 0;
      t.ticks.forEach((e, k) => {
        const x = t.graph.x0 + k * 3, total = e.us.reduce((a, b) => a + b, 0) / 1000;
        const want = total > 0 ? Math.max(1, Math.round((total / t.graph.top_ms) * H)) : 0;
        let top = H;
        while (top > 0 && phaseAt(x, top - 1) >= 0) top--;
        for (let y = top; y < H; y++) stepPixels += phaseAt(x, y) === 0;
        right += Math.abs(H - top - want) <= 1 || (t.graph.interval_y !== null && Math.abs(top - t.graph.interval_y) <= 1);
      });
      check(right === t.ticks.length, "each bar is as tall as its tick's work (" + right + " of " + t.ticks.length + " bars)");
      check(stepPixels > 0, "the step's share is drawn in its colour (" + stepPixels + " pixels)");
      check(/^tick work p50 [0-9.]+ ms · max [0-9.]+ ms of 33\.3 ms/.test(t.caption), "the caption gives the figures (" + t.caption + ")");
      await page.click("#tick-toggle");
      const hidden = await page.evaluate(() => document.getElementById("ticks").getBoundingClientRect().width);
      check(hidden === 0, "the tick graph toggles off");
    }

    // Drawn under the agents: solid inside obstacles (points at least 2 m inside, where no
    // agent's body reaches), not in the free corridor. The level stands beside the groups.
    {
      const inside = [[70, -22, "the concave L block"], [132, -23, "the U-shaped alcove"], [74, 12, "a pillar"],
        [110, 36, "nothing: the corridor"]];
      const at = await page.evaluate((pts) => pts.map(([x, y]) => window.steerdView.toScreen(x, y)), inside);
      const png = decodePng(await page.screenshot());
      for (let i = 0; i < inside.length; i++) {
        const [sx, sy] = at[i], n = patchMatches(png, sx, sy, OBSTACLE_RGB);
        check(sx > 2 && sy > 2 && sx < png.width - 3 && sy < png.height - 3, inside[i][2] + " is on the screen");
        if (i < 3) check(n >= 20, inside[i][2] + " is drawn filled (" + n + "/25 pixels)");
        else check(n === 0, inside[i][2] + " is not filled (" + n + "/25 pixels)");
      }
    }
    await sleep(300);
    const shot1 = await page.screenshot();
    await sleep(1000);
    const shot2 = await page.screenshot();
    const skipPanels = await panels(page);
    const a = agentPixels(decodePng(shot1), null, skipPanels), b = agentPixels(decodePng(shot2), null, skipPanels);
    check(a.size > 300 && b.size > 300, "agents are drawn (" + a.size + " and " + b.size + " agent-coloured pixels)");
    check(difference(a, b) > 200, "agents moved in a second (" + difference(a, b) + " pixels changed)");

    // Click an agent that has no other within 30 px; its id shows in the inspector.
    const target = await page.evaluate(() => {
      const all = window.steerdView.agents();
      return all.find((p) => p.screen[0] > 50 && p.screen[0] < 650 && p.screen[1] > 80 && p.screen[1] < 650 &&
        all.every((q) => q === p || Math.hypot(q.screen[0] - p.screen[0], q.screen[1] - p.screen[1]) > 30));
    });
    check(target !== undefined, "an agent stands apart to be clicked");
    const now = await page.evaluate((id) => window.steerdView.agents().find((p) => p.id === id), target.id);
    await page.mouse.click(now.screen[0], now.screen[1]);
    await waitFor(page, (id) => document.getElementById("inspector-id").textContent === String(id) &&
      document.querySelectorAll("#inspector-fields tr").length > 0, "the inspector shows agent " + target.id, 10000,
      target.id);
    const owner = await page.evaluate(() => [...document.querySelectorAll("#inspector-fields tr")].map((r) => r.textContent).join("|"));
    check(/behaviour/.test(owner) && /owner/.test(owner), "the inspector lists behaviour and owner (" + owner.slice(0, 80) + "…)");
    if (SHOT) {
      // The path and target from /api/agent, a few events, and the crowds spread out in the level.
      await page.waitForFunction(() => window.steerdView.tick() >= 900, null, { timeout: 60000 });
      fs.writeFileSync(SHOT, await page.screenshot());
    }

    // The selected agent's route and target (/api/agent) are drawn before the pause, which
    // keeps them as they are.
    await waitFor(page, () => window.steerdView.routeShown(), "the selected agent's route is drawn", 10000);
    // Pause: the picture stands still. The map stays live while paused (the demo's side door
    // closes and opens every 20 s), and a changed obstacle under an agent's anti-aliased edge
    // changes a few of its pixels: a pair of shots that straddles a map change is taken again.
    await page.click("#pause");
    await sleep(300);
    const frozen = () => page.evaluate(() => ({
      version: window.steerdView.map() ? window.steerdView.map().version : -1,
      agents: JSON.stringify(window.steerdView.agents()),
    }));
    let moved = -1, still = false;
    for (let attempt = 0; attempt < 3; attempt++) {
      // The panels' text may change while paused (the inspector's events): skipped where they
      // are at either shot.
      const s1 = await frozen();
      const skip1 = await panels(page), shot1 = decodePng(await page.screenshot());
      await sleep(800);
      const shot2 = decodePng(await page.screenshot()), skip = skip1.concat(await panels(page));
      const p1 = agentPixels(shot1, null, skip), p2 = agentPixels(shot2, null, skip);
      const s2 = await frozen();
      still = s1.agents === s2.agents;
      if (!still) break;
      if (s1.version !== s2.version) continue;
      moved = difference(p1, p2);
      break;
    }
    check(still, "paused, the agents the page draws keep their positions");
    check(moved === 0, "paused, nothing moves (" + moved + " agent pixels changed)");
    await page.click("#pause");

    // Zoom in on an agent: the page sends a VIEW and receives only what it shows.
    const total = await page.evaluate(() => window.steerdView.agents().length);
    await page.mouse.move(now.screen[0], now.screen[1]);
    for (let i = 0; i < 3; i++) {
      await page.mouse.wheel(0, -300);
      await sleep(50);
    }
    await waitFor(page, (n) => window.steerdView.agents().length > 0 && window.steerdView.agents().length < n,
      "zoomed in, fewer agents arrive (the VIEW)", 10000, total);
    // Zoomed in, paused: an agent apart from the others is a disc of its own radius at the
    // camera's scale, in its behaviour's colour; then in its owner's; and hovering names it.
    {
      await page.click("#pause");
      await sleep(300);
      const one = await page.evaluate((sel) => {
        const all = window.steerdView.agents(), det = new Map(window.steerdView.details().map((d) => [d.id, d]));
        const scale = window.steerdView.camera().scale / devicePixelRatio;
        const p = all.find((p) => p.id !== sel && det.has(p.id) && det.get(p.id).r * scale >= 6 &&
          p.screen[0] > 60 && p.screen[0] < innerWidth - 320 && p.screen[1] > 140 && p.screen[1] < innerHeight - 60 &&
          all.every((q) => q === p || Math.hypot(q.screen[0] - p.screen[0], q.screen[1] - p.screen[1]) >
            3 * det.get(p.id).r * scale + 10));
        return p ? { ...p, ...det.get(p.id), px: det.get(p.id).r * scale, colour: window.steerdView.colourOf(p.id) } : null;
      }, target.id);
      check(one !== null, "zoomed in, an agent stands apart with a body of 6 px or more");
      const disc = Math.PI * one.px * one.px;
      const got = discPixels(decodePng(await page.screenshot()), one.screen[0], one.screen[1], one.px, hexRgb(one.colour));
      check(got > 0.7 * disc && got < 1.2 * disc, "agent " + one.id + " (" + one.behaviour + ", radius " + one.r +
        " m) is a disc of " + one.px.toFixed(1) + " px in " + one.colour + " (" + got + " pixels of " + disc.toFixed(0) + ")");
      await page.click("#colour");
      await sleep(200);
      const owner = await page.evaluate((id) => window.steerdView.colourOf(id), one.id);
      const byOwner = discPixels(decodePng(await page.screenshot()), one.screen[0], one.screen[1], one.px, hexRgb(owner));
      const legendOwner = await page.evaluate(() => window.steerdView.legend().map((e) => e.name));
      check(owner !== one.colour && byOwner > 0.7 * disc && legendOwner.includes("server"),
        "coloured by owner, it is " + owner + " (" + byOwner + " pixels) and the legend says server");
      // By state: moving or at rest by the snapshot's velocity (paused, they keep it).
      await page.click("#colour");
      await sleep(200);
      {
        const [now, states, legend, all] = await page.evaluate((id) => [window.steerdView.colourOf(id),
          window.steerdView.stateColours(), window.steerdView.legend(), window.steerdView.agents()], one.id);
        const a = all.find((p) => p.id === one.id), want = Math.hypot(a.vx, a.vy) > 0.05 ? "moving" : "at rest";
        const byState = discPixels(decodePng(await page.screenshot()), one.screen[0], one.screen[1], one.px, hexRgb(now));
        const moving = all.filter((p) => Math.hypot(p.vx, p.vy) > 0.05).length;
        const said = Object.fromEntries(legend.map((e) => [e.name, e.count]));
        check(now === states[want] && byState > 0.7 * disc,
          "coloured by state, it is " + want + " in " + now + " (" + byState + " pixels)");
        check(legend.every((e) => e.name in states) && (said.moving || 0) <= moving,
          "the legend names states only (" + legend.map((e) => e.name + " " + e.count).join(", ") + "; " + moving + " moving of " + all.length + ")");
      }
      await page.click("#colour");
      await page.mouse.move(one.screen[0], one.screen[1]);
      await waitFor(page, (a) => document.getElementById("world").title.startsWith("agent " + a.id + " · " + a.behaviour),
        "hovering agent " + one.id + " names it", 5000, one);
      await page.click("#pause");
    }

    // Pan: drag the world; the camera moves.
    const cam1 = await page.evaluate(() => window.steerdView.camera());
    await page.mouse.move(500, 350);
    await page.mouse.down();
    await page.mouse.move(300, 250, { steps: 5 });
    await page.mouse.up();
    const cam2 = await page.evaluate(() => window.steerdView.camera());
    check(cam2.x > cam1.x && cam2.y < cam1.y, "dragging pans the camera");
    console.log("# " + total + " agents in the whole world");

    // Fit everything: the whole world's agents again, every one of them on the screen.
    await page.click("#fit");
    await waitFor(page, (n) => window.steerdView.agents().length >= n && window.steerdView.agents().every((p) =>
      p.screen[0] >= 0 && p.screen[0] <= innerWidth && p.screen[1] >= 0 && p.screen[1] <= innerHeight),
      "fit everything: all " + total + " agents are on the screen", 10000, total);
    await waitFor(page, () => !window.steerdView.fitting(), "and the camera stays", 10000);

    // The scale bar: a round length, as long on the screen as the camera says.
    {
      const bar = await page.evaluate(() => ({ ...window.steerdView.scaleBar(), scale: window.steerdView.camera().scale }));
      check([1, 2, 5].some((k) => Math.abs(bar.metres / Math.pow(10, Math.round(Math.log10(bar.metres / k))) - k) < 1e-6),
        "the scale bar is a round length (" + bar.metres + " m)");
      check(Math.abs(bar.px - bar.metres * bar.scale) <= 1 && bar.px >= 80 && bar.px <= 200,
        "the scale bar is " + bar.metres + " m long at the camera's scale (" + bar.px + " px)");
      const png = decodePng(await page.screenshot());
      const mid = patchMatches(png, bar.x + bar.px / 2, bar.y + 2, SCALE_RGB);
      const past = patchMatches(png, bar.x + bar.px + 6, bar.y + 2, SCALE_RGB);
      check(mid >= 15 && past === 0, "the scale bar is drawn, and ends where it says (" + mid + ", " + past + "/25)");
    }

    // Velocities: no line in their colour until the toggle, then one from each moving agent.
    {
      const skip = await page.evaluate(() => {
        const r = document.getElementById("bar").getBoundingClientRect();
        return { x: r.x, y: r.y, width: r.width, height: r.height };
      });
      const before = agentPixels(decodePng(await page.screenshot()), VELOCITY_RGB, skip).size;
      await page.click("#velocities");
      await sleep(300);
      const on = agentPixels(decodePng(await page.screenshot()), VELOCITY_RGB, skip).size;
      await page.click("#velocities");
      await sleep(300);
      const off = agentPixels(decodePng(await page.screenshot()), VELOCITY_RGB, skip).size;
      check(before === 0 && on > 100 && off === 0,
        "velocities toggle on and off (" + before + ", " + on + ", " + off + " velocity-coloured pixels)");
    }

    // Routes: none in their colour until the toggle, then those of the agents on the screen.
    {
      const skip = await panels(page);
      const before = agentPixels(decodePng(await page.screenshot()), ROUTES_RGB, skip).size;
      await page.click("#routes");
      await waitFor(page, () => (window.steerdView.routes() || []).filter((r) => r.path_m).length >= 10,
        "the routes of the agents on the screen arrive (/api/routes)", 5000);
      await sleep(200);
      const on = agentPixels(decodePng(await page.screenshot()), ROUTES_RGB, skip).size;
      await page.click("#routes");
      await sleep(300);
      const off = agentPixels(decodePng(await page.screenshot()), ROUTES_RGB, skip).size;
      check(before === 0 && on > 200 && off === 0,
        "routes toggle on and off (" + before + ", " + on + ", " + off + " route-coloured pixels)");
    }

    // An agent sent to a point walled in: UNREACHABLE, ringed on the world and logged by name.
    {
      const spawned = await clientShell(server.gamePort, [
        'add-obstacle --id 900 --type wall --points "-100,-100;-96,-100;-96,-96;-100,-96;-100,-100"',
        "spawn --model dynamic --x -90 --y -90"], /^\d+$/m);
      const id = Number(/^(\d+)$/m.exec(spawned)[1]);
      await page.click("#fit");
      await waitFor(page, (id) => window.steerdView.agents().some((p) => p.id === id && p.screen[0] >= 0 &&
        p.screen[0] <= innerWidth && p.screen[1] >= 0 && p.screen[1] <= innerHeight),
        "the new agent " + id + " is on the screen", 10000, id);
      await waitFor(page, () => !window.steerdView.fitting(), "the camera fits it", 10000);
      const said = await clientShell(server.gamePort, ["goto " + id + " --target -98,-98 --wait 5"], /unreachable/);
      check(/"event":"unreachable"/.test(said), "the GOTO is unreachable (" + said.trim() + ")");
      await waitFor(page, (id) => window.steerdView.marks().some((m) => m.id === id && m.code === 9) &&
        document.getElementById("log").textContent.includes("agent " + id + " unreachable"),
        "the live view marks agent " + id + " and logs it as unreachable", 10000, id);
      const at = await page.evaluate((id) => window.steerdView.agents().find((p) => p.id === id).screen, id);
      const png = decodePng(await page.screenshot());
      let ring = 0;
      for (let dy = -40; dy <= 40; dy++)
        for (let dx = -40; dx <= 40; dx++) {
          const x = Math.round(at[0]) + dx, y = Math.round(at[1]) + dy, i = (y * png.width + x) * 3;
          if (x < 0 || y < 0 || x >= png.width || y >= png.height) continue;
          const d = Math.abs(png.rgb[i] - UNREACHABLE_RGB[0]) + Math.abs(png.rgb[i + 1] - UNREACHABLE_RGB[1]) +
            Math.abs(png.rgb[i + 2] - UNREACHABLE_RGB[2]);
          ring += d < 40;
        }
      check(ring > 30, "a red ring round agent " + id + " (" + ring + " pixels)");
    }
    // An admin's actions (on loopback without a secret the view is an admin): a GOTO by clicking
    // the ground, an obstacle by dragging a rectangle, a door opened and closed by clicking it.
    {
      await waitFor(page, () => window.steerdView.role() === "admin" &&
        getComputedStyle(document.getElementById("admin")).display !== "none", "the view is an admin's: its actions show");
      // Places in the world clear of agents (60 px) and obstacles (a 50 px box), off the panels.
      const places = await page.evaluate(() => {
        const v = window.steerdView, all = v.agents(), [lo, hi] = v.world(), out = [];
        const boxes = v.map().obstacles.map((o) => {
          const pts = o.kind === "circle" ? [[o.points_m[0][0] - o.radius_m, o.points_m[0][1] - o.radius_m],
            [o.points_m[0][0] + o.radius_m, o.points_m[0][1] + o.radius_m]] : o.points_m;
          const s = pts.map(([x, y]) => v.toScreen(x, y));
          return [Math.min(...s.map((p) => p[0])), Math.min(...s.map((p) => p[1])), Math.max(...s.map((p) => p[0])),
            Math.max(...s.map((p) => p[1]))];
        });
        for (let y = 220; y < innerHeight - 160; y += 10)
          for (let x = 80; x < innerWidth - 340; x += 10) {
            const [wx, wy] = v.toWorld(x, y), [ax, ay] = v.toWorld(x - 50, y + 50), [bx, by] = v.toWorld(x + 50, y - 50);
            if (ax < lo[0] || ay < lo[1] || bx > hi[0] || by > hi[1]) continue;
            if (all.some((p) => Math.hypot(p.screen[0] - x, p.screen[1] - y) < 60)) continue;
            if (boxes.some((b) => b[0] < x + 50 && b[2] > x - 50 && b[1] < y + 50 && b[3] > y - 50)) continue;
            if (out.every((q) => Math.hypot(q.x - x, q.y - y) > 150)) out.push({ x, y, wx, wy });
          }
        return out;
      });
      check(places.length >= 2, "two clear places on the screen (" + places.length + ")");
      const [spot, box] = places;
      const adminDone = (what) => waitFor(page, (w) => window.steerdView.adminLog().some((e) => e.what.startsWith(w) && e.ok),
        "the server ACKs the view's " + what, 5000, what);
      // GOTO: the selected agent's route is planned to the point clicked, and drawn to it.
      const sel = Number(await page.evaluate(() => document.getElementById("inspector-id").textContent));
      check(sel > 0, "an agent is selected (" + sel + ")");
      await page.click("#mode-goto");
      await page.mouse.click(spot.x, spot.y);
      await adminDone("goto " + sel);
      await waitFor(page, (a) => {
        const r = window.steerdView.route(), d = window.steerdView.details().find((x) => x.id === a.sel);
        return d && d.behaviour === "goto" && r && Math.hypot(r[r.length - 1][0] - a.wx, r[r.length - 1][1] - a.wy) < 0.6;
      }, "agent " + sel + " goes by GOTO to the point clicked (" + spot.wx.toFixed(1) + ", " + spot.wy.toFixed(1) + ")",
      10000, { sel, wx: spot.wx, wy: spot.wy });
      await sleep(100);
      {
        const end = await page.evaluate(() => { const r = window.steerdView.route(); return window.steerdView.toScreen(...r[r.length - 1]); });
        const png = decodePng(await page.screenshot());
        const n = Math.max(...ROUTE_RGBS.map((c) => patchMatches(png, end[0], end[1], c)));
        check(n >= 10, "the route's last node is drawn where the click was (" + n + "/25 pixels)");
      }
      await page.click("#mode-goto");
      // A rectangle dragged: a new polygon of the map, drawn filled.
      await page.click("#mode-obstacle");
      await page.mouse.move(box.x - 25, box.y - 25);
      await page.mouse.down();
      await page.mouse.move(box.x + 25, box.y + 25, { steps: 5 });
      await page.mouse.up();
      await adminDone("add obstacle");
      const added = await page.evaluate(() => Number(/add obstacle (\d+)/.exec(window.steerdView.adminLog().slice(-1)[0].what)[1]));
      await waitFor(page, (id) => window.steerdView.map().obstacles.some((o) => o.id === id && o.kind === "polygon" &&
        o.points_m.length === 4), "obstacle " + added + " is in the map the server sends", 5000, added);
      await sleep(100);
      const filled = () => page.screenshot().then((b) => patchMatches(decodePng(b), box.x, box.y, OBSTACLE_RGB));
      let n = await filled();
      check(n >= 20, "it is drawn filled where it was dragged (" + n + "/25 pixels)");
      await page.click("#mode-obstacle");
      // A door: clicked, the obstacle goes (a dashed outline stays); clicked again, it is back.
      await page.click("#mode-door");
      await page.mouse.click(box.x, box.y);
      await adminDone("open door " + added);
      await waitFor(page, (id) => !window.steerdView.map().obstacles.some((o) => o.id === id) &&
        window.steerdView.opened().includes(id), "the door opens: obstacle " + added + " leaves the map", 5000, added);
      await sleep(100);
      {
        const png = decodePng(await page.screenshot());
        let dashed = 0;
        for (let k = -25; k <= 25; k++) dashed += patchMatches(png, box.x + k, box.y - 25, OPENED_RGB) > 0;
        n = patchMatches(png, box.x, box.y, OBSTACLE_RGB);
        check(n === 0 && dashed >= 15, "it is no longer filled (" + n + "/25), and drawn dashed (" + dashed + " of 51 points)");
      }
      await page.mouse.click(box.x, box.y);
      await adminDone("close door " + added);
      await waitFor(page, (id) => window.steerdView.map().obstacles.some((o) => o.id === id) &&
        !window.steerdView.opened().includes(id), "the door closes: obstacle " + added + " is back", 5000, added);
      await sleep(100);
      n = await filled();
      check(n >= 20, "drawn filled again (" + n + "/25 pixels)");
      await page.click("#mode-door");
    }
    // The selected agent's neighbours: an avoider with two agents within its reach (0.5 m bodies,
    // separation_radius 2 m: 3 m; at 1.4 and 2 m, so a gap shows the lines) and one beyond (10 m);
    // clicked, a line to each of the two.
    {
      const out = await clientShell(server.gamePort, ["spawn --model dynamic --x -60 --y -60",
        "spawn --model dynamic --x -58.6 --y -60", "spawn --model dynamic --x -60 --y -62",
        "spawn --model dynamic --x -50 --y -60"], /^\d+\n\d+\n\d+\n\d+$/m);
      const [a, b, c] = out.match(/^\d+$/gm).map(Number);
      await clientShell(server.gamePort, ["params " + a + ' --set "avoid_weight=1"'], /parameters set/);
      await waitFor(page, (id) => window.steerdView.agents().some((p) => p.id === id), "agent " + a + " arrives", 5000, a);
      for (let i = 0; i < 6; i++) {
        const at = await page.evaluate((id) => window.steerdView.agents().find((p) => p.id === id).screen, a);
        await page.mouse.move(at[0], at[1]);
        await page.mouse.wheel(0, -400);
        await sleep(60);
      }
      await sleep(400);
      const at = await page.evaluate((id) => window.steerdView.agents().find((p) => p.id === id).screen, a);
      await page.mouse.click(at[0], at[1]);
      await waitFor(page, (w) => JSON.stringify(window.steerdView.neighbours()) === JSON.stringify(w),
        "agent " + a + "'s neighbours are " + b + " and " + c + ", nearest first", 5000, [b, c]);
      await sleep(200);
      const [pa, pb, pc] = await page.evaluate((ids) => ids.map((id) => window.steerdView.agents().find((p) => p.id === id).screen), [a, b, c]);
      const png = decodePng(await page.screenshot());
      const mid = (p, q, t) => [p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])];
      const line = (q) => [0.45, 0.5, 0.55].map((t) => patchMatches(png, ...mid(pa, q, t), NEIGHBOUR_RGB)).reduce((x, y) => x + y, 0);
      const toB = line(pb), toC = line(pc);
      check(toB > 0 && toC > 0, "a line to each neighbour (" + toB + ", " + toC + " pixels at their middles)");
      await waitFor(page, () => /neighbours2 within 3\.00 m \(separation 0\.00, avoidance 1\.00\)/.test(
        document.getElementById("inspector-fields").textContent), "the inspector says how many, within what and why", 5000);
      await waitFor(page, () => /ownerclient \d+ \(steerd-client\)/.test(document.getElementById("inspector-fields").textContent),
        "and the name its owner gave in HELLO", 5000);
    }
    {
      const before = await page.evaluate(() => window.steerdView.ticks().slice(-1)[0].tick);
      await page.click("#tick-toggle");
      await waitFor(page, (b) => document.getElementById("ticks").getBoundingClientRect().width > 0 &&
        window.steerdView.ticks().slice(-1)[0].tick > b, "the tick graph toggles on again, still filling", 5000, before);
    }
    await stopServer(server);

    // With a secret the view needs an observer token.
    const secret = "browser-test-secret-0123456789";
    server = await startServer({ STEERD_SECRET: secret });
    const token = execFileSync(STEERD, ["token", "--name", "viewer", "--role", "observer"],
      { env: { ...process.env, STEERD_SECRET: secret } }).toString().trim();
    await page.goto("http://127.0.0.1:" + server.port + "/");
    await waitFor(page, () => getComputedStyle(document.getElementById("token")).display !== "none",
      "without a token the page asks for one", 10000);
    check(await page.evaluate(() => window.steerdView.agents().length === 0), "and draws no agents");
    await page.goto("http://127.0.0.1:" + server.port + "/?token=" + encodeURIComponent(token));
    await waitFor(page, () => window.steerdView.agents().length >= 20, "with an observer token it draws the world");
    await waitFor(page, () => window.steerdView.role() === "observer" &&
      getComputedStyle(document.getElementById("admin")).display === "none", "an observer's view shows no admin actions", 5000);
  } finally {
    await browser.close();
    if (server) await stopServer(server).catch(() => {});
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().then(() => console.log("all passed"), (e) => {
  console.error(e.message || e);
  process.exit(1);
});
