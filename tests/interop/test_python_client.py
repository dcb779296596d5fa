#!/usr/bin/python3
"""Interop test: a steerd client written from protocol/PROTOCOL.md alone.

It uses Debian's independent peers, python3-enet (a binding to the system libenet)
and python3-msgpack, and none of the project's C code, to check that the normative
spec is enough to talk to the real server.

usage: test_python_client.py /path/to/steerd

Exit status 0 when every check passes; the last line is "N passed, M failed".
Loopback only (127.0.0.1); everything is bounded by OVERALL_TIMEOUT seconds and the
server process is always killed at the end.
"""

import math
import os
import re
import signal
import subprocess
import sys
import threading
import time

try:
    import enet
    import msgpack
except ImportError as e:  # pragma: no cover
    print("missing dependency (apt-get install python3-enet python3-msgpack): %s" % e)
    print("0 passed, 1 failed")
    sys.exit(2)

OVERALL_TIMEOUT = 60.0
HOST = "127.0.0.1"
TICK_RATE = 30
SNAPSHOT_RATE = 30          # = tick rate: every tick has a snapshot (used by the QUERY check)
WORLD = (-50.0, -40.0, 60.0, 50.0)   # asymmetric on purpose
SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "protocol", "PROTOCOL.md")

# message types (§2, §6, §7)
HELLO, SPAWN, DESPAWN, SET_BEHAVIOUR, SET_PATH, SET_PARAMS, STOP, QUERY, PING = range(1, 10)
WELCOME, ACK, ERROR, EVENT, SNAPSHOT = 32, 33, 34, 35, 36
EVENTS = 38
MAP, MAP_CHANGED = 39, 40                  # §17
ADD_OBSTACLE, REMOVE_OBSTACLE = 12, 13     # §17.3
# error codes (§8)
BAD_MESSAGE, UNKNOWN_TYPE, BAD_FIELD, VERSION_MISMATCH, NOT_WELCOMED, NO_SUCH_AGENT = 1, 2, 3, 4, 5, 6
RATE_LIMITED, NOT_OWNER = 11, 12
FORBIDDEN, NO_SUCH_OBSTACLE, OBSTACLE_EXISTS, BLOCKED, BUSY = 14, 18, 19, 20, 21
# event codes (§7.4)
EV_ARRIVED, EV_WAYPOINT, EV_PATH_FINISHED, EV_REVERSED, EV_SPAWNED, EV_DESPAWNED, EV_STUCK = range(7)
EV_PLANNED, EV_REPLANNED, EV_UNREACHABLE = 7, 8, 9   # GOTO (§5.6)
BAD_TARGET, MODEL_MISMATCH = 9, 8
# disconnect reasons (§9)
DISC_SHUTDOWN, DISC_VERSION = 1, 4

# A map (§16) for the GOTO checks (§5.6), away from everything else the scenario does: a wall
# along x = 45 from y = 15 up to the world's edge, and a solid square at (20..24, 40..44).
MAP_PATH = "/tmp/steerd_interop_map_%d.json" % os.getpid()
MAP_WALL = ((45.0, 15.0), (45.0, 50.0))
MAP_SQUARE = ((20.0, 40.0), (24.0, 40.0), (24.0, 44.0), (20.0, 44.0))
MAP_JSON = ('{"format": "steerd-map", "version": 1, "obstacles": ['
            '{"id": 1, "type": "wall", "points": [[45, 15], [45, 50]]},'
            '{"id": 2, "type": "polygon", "points": [[20, 40], [24, 40], [24, 44], [20, 44]]}]}')

START = time.monotonic()
DEADLINE = START + OVERALL_TIMEOUT

passed = 0
failed = 0


class Fatal(Exception):
    """A failure after which the rest of the test cannot run."""


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("PASS  %s" % what)
    else:
        failed += 1
        print("FAIL  %s%s" % (what, (": " + str(detail)) if detail != "" else ""))
    sys.stdout.flush()
    return bool(cond)


def require(cond, what, detail=""):
    if not check(cond, what, detail):
        raise Fatal(what)


def remaining():
    return DEADLINE - time.monotonic()


def is_uint(v, bits=32):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < (1 << bits)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def angle_diff(a, b):
    d = (a - b) % (2 * math.pi)
    return min(d, 2 * math.pi - d)


def dist_point_segment(p, a, b):
    ax, ay = a
    bx, by = b
    px, py = p
    dx, dy = bx - ax, by - ay
    L2 = dx * dx + dy * dy
    t = 0.0 if L2 == 0 else max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / L2))
    return math.hypot(px - (ax + t * dx), py - (ay + t * dy))


def dist_polyline(p, pts):
    if len(pts) == 1:
        return math.hypot(p[0] - pts[0][0], p[1] - pts[0][1])
    return min(dist_point_segment(p, pts[i], pts[i + 1]) for i in range(len(pts) - 1))


# ---------------------------------------------------------------------------------------------
# Spec examples: decode every hex example of PROTOCOL.md with an independent msgpack library and
# compare with the value the spec prints next to it; re-encode the pure-integer/string commands.

SPEC_EXAMPLES = {
    "hello": [1, 1, {"version": 1, "name": "godot-client"}],
    "hello_token": [1, 1, {"version": 1, "name": "godot-client", "token":
                           "stk1.lQGsZ29kb3QtY2xpZW50qmNvbnRyb2xsZXLOaVW5AM5pVarw."
                           "WyfI4-VbW9JIWLccNl0q-6pHhbq1RzHjjtskgQDm0Uw"}],
    "spawn": [2, 2, {"model": "dynamic", "x": 10, "y": -5.5, "orientation": 1.5,
                     "limits": {"max_speed": 3},
                     "behaviour": {"kind": "arrive", "target": [20, 4],
                                   "params": {"slow_radius": 3}}}],
    "despawn": [3, 3, {"agent": 4194305}],
    "set_behaviour": [4, 4, {"agent": 4194305, "behaviour": {"kind": "pursue",
                                                             "target_agent": 4194306,
                                                             "facing": "target"}}],
    "set_path": [5, 5, {"agent": 4194305, "points": [[0, 0], [10, 0], [10, 10]], "radius": 1,
                        "mode": "pingpong", "cornering": "none"}],
    "set_params": [6, 6, {"agent": 4194305, "limits": {"max_speed": 5},
                          "params": {"time_to_target": 0.25}}],
    "stop": [7, 7, {"agent": 4194305}],
    "query": [8, 8, {"agent": 4194305}],
    "ping": [9, 9, {"client_time_us": 1700000000000000}],
    "welcome": [32, 1, {"client_id": 3, "tick_rate": 30, "snapshot_rate": 15,
                        "world": [-500, -500, 500, 500], "tick": 1234,
                        "server_time_us": 41133333, "protocol": 1, "max_agents": 10000}],
    "ack_spawn": [33, 2, 2, {"agent": 4194305}],
    "ack_query": [33, 8, 8, {"agent": 4194305, "tick": 1235, "model": "dynamic", "x": 12.5, "y": -3.25,
                             "orientation": 0.75, "vx": 1.5, "vy": 0.5, "rotation": 0,
                             "behaviour": "follow_path", "arrived": False, "path_node": 2,
                             "limits": {"max_speed": 3, "max_acceleration": 10,
                                        "max_rotation": 3, "max_angular_acceleration": 12,
                                        "radius": 0.5}, "owner": 3,
                             "tuning": {"avoid_weight": 1, "avoid_horizon": 3, "avoid_priority": 0,
                                        "wall_lookahead": 1, "wall_margin": 0.25, "stuck_time": 5,
                                        "stuck_reaction": "report", "arrival": "point"}}],
    "ack_ping": [33, 9, 9, {"client_time_us": 1700000000000000, "server_time_us": 41166666,
                            "tick": 1235}],
    "ack_set_params_target_lost": [33, 6, 6, {"agent": 4194305, "target_lost": True}],
    "error": [34, 6, 3, "must be > 0", "params.time_to_target"],
    "error_agent": [34, 3, 6, "no such agent", "agent"],
    "error_nil": [34, 2, 5, "send HELLO first", None],
    "event": [35, 1240, 1, 4194305, 2],
    "events": [38, 0, [1240, 1, 4194305, 2, 1240, 0, 4194306, 0]],
    "snapshot": [36, 1235, 41166666, 0, 1, 2, [4194305, 1250, -325, 7823, 150, 50,
                                               4194306, -10000, 4200, -31291, 0, 0]],
    "hello_delta": [1, 1, {"version": 1, "name": "godot-client", "snapshots": "delta"}],
    "view": [10, 10, {"centre": [12.5, -3.25], "radius": 40}],
    "ack_view": [33, 10, 10, {}],
    "snapshot_ack": [11, 1237],
    "snapshot_ack_merged": [11, 1237, [1, 3]],
    "delta": [37, 1237, 41233333, 1235, 0, 1,
              [4194305, 61, 3, 110, -12, 12, 652, 2, 71, 500, -750, 10430], [4194306]],
    "set_behaviour_goto": [4, 12, {"agent": 4194305, "behaviour": {"kind": "goto", "target": [30, 12.5],
                                                                   "node_radius": 0.75}}],
    "error_goto_blocked": [34, 12, 20, "the target is inside the map's geometry", "behaviour.target"],
    "event_planned": [35, 1241, 7, 4194305, 4312],
    "ack_query_goto": [33, 13, 8, {"agent": 4194305, "tick": 1250, "model": "dynamic", "x": -4.5, "y": 20,
                                   "orientation": 0.25, "vx": 2.75, "vy": 0.75, "rotation": 0,
                                   "behaviour": "goto", "arrived": False, "path_node": 0,
                                   "limits": {"max_speed": 3, "max_acceleration": 10, "max_rotation": 3,
                                              "max_angular_acceleration": 12, "radius": 0.5}, "owner": 3,
                                   "tuning": {"avoid_weight": 1, "avoid_horizon": 3, "avoid_priority": 0,
                                              "wall_lookahead": 1, "wall_margin": 0.25, "stuck_time": 5,
                                              "stuck_reaction": "report", "arrival": "point"},
                                   "goto": {"status": "following", "reason": "new", "target": [30, 12.5],
                                            "goal": [30, 12.5], "partial": False,
                                            "route": [[-0.75, 21.25], [0.75, 21.25], [30, 12.5]]}}],
    "events_goto": [38, 0, [1300, 8, 4194305, 5127, 1300, 9, 4194306, 1]],
}
# encodings the spec says are exact and contain only ints and strings (shortest forms)
SPEC_REENCODE = ("hello", "despawn", "stop", "query", "ping", "ack_spawn", "event", "snapshot", "event_planned",
                 "events_goto", "error_goto_blocked",
                 "error", "error_agent", "error_nil", "ack_ping", "ack_set_params_target_lost", "snapshot_ack",
                 "snapshot_ack_merged")


# §17: the map's examples, marked "<!-- map-example: NAME -->"
MAP_EXAMPLES = {
    "map": [39, 5, 0, 1, 3, [{"id": 1, "type": "circle", "center": [10, 10], "radius": 2},
                             {"id": 7, "type": "polygon", "points": [[0, 0], [10, 0], [10, 8], [0, 8]]},
                             {"id": 3, "type": "wall", "points": [[10, 3], [10, 6]]}]],
    "map_changed_added": [40, 6, 1240, [], [{"id": 12, "type": "wall", "points": [[10, 6], [10, 8]]}]],
    "map_changed_removed": [40, 7, 1300, [12], []],
    "add_obstacle": [12, 12, {"id": 12, "type": "wall", "points": [[10, 6], [10, 8]]}],
    "add_obstacle_circle": [12, 14, {"id": 20, "type": "circle", "center": [-3.5, 4], "radius": 0.75}],
    "remove_obstacle": [13, 13, {"id": 12}],
    "ack_add_obstacle": [33, 12, 12, {"obstacle": 12, "version": 6, "moved": 2}],
    "ack_remove_obstacle": [33, 13, 13, {"obstacle": 12, "version": 7}],
    "error_obstacle_exists": [34, 12, 19, "obstacle 12 exists: remove it first", "id"],
    "event_stuck": [35, 1250, 6, 4194305, 3],
    "set_params_avoid": [6, 15, {"agent": 4194305, "params": {"avoid_weight": 1, "avoid_priority": 200,
                                                              "stuck_time": 2, "stuck_reaction": "nudge"}}],
}
MAP_REENCODE = ("map_changed_removed", "remove_obstacle", "ack_add_obstacle", "ack_remove_obstacle",
                "error_obstacle_exists", "event_stuck")


def same_value(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= 1e-6 * max(1.0, abs(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a.keys()) == list(b.keys()) and all(same_value(a[k], b[k]) for k in a)
    return a == b


def check_spec_examples():
    try:
        with open(SPEC, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        check(False, "read PROTOCOL.md for its examples", e)
        return
    blocks = dict(re.findall(r"<!-- example: (\w+) -->\s*```\s*\n(.*?)```", text, re.S))
    check(set(blocks) == set(SPEC_EXAMPLES), "PROTOCOL.md has the %d hex examples" % len(SPEC_EXAMPLES),
          sorted(set(blocks) ^ set(SPEC_EXAMPLES)))
    bad = []
    for name, expected in SPEC_EXAMPLES.items():
        if name not in blocks:
            continue
        raw = bytes.fromhex(blocks[name].replace("\n", " "))
        try:
            got = msgpack.unpackb(raw, raw=False)
        except Exception as e:  # noqa: BLE001
            bad.append("%s: %s" % (name, e))
            continue
        if not same_value(got, expected):
            bad.append("%s decodes to %r" % (name, got))
        if name in SPEC_REENCODE and msgpack.packb(expected) != raw:
            bad.append("%s: msgpack-python encodes %s" % (name, msgpack.packb(expected).hex()))
    check(not bad, "every PROTOCOL.md hex example decodes (msgpack-python) to the value printed "
          "beside it", "; ".join(bad))
    mblocks = dict(re.findall(r"<!-- map-example: (\w+) -->\s*```\s*\n(.*?)```", text, re.S))
    check(set(mblocks) == set(MAP_EXAMPLES), "PROTOCOL.md has the %d map examples of §17" % len(MAP_EXAMPLES),
          sorted(set(mblocks) ^ set(MAP_EXAMPLES)))
    bad = []
    for name, expected in MAP_EXAMPLES.items():
        if name not in mblocks:
            continue
        raw = bytes.fromhex(mblocks[name].replace("\n", " "))
        try:
            got = msgpack.unpackb(raw, raw=False)
        except Exception as e:  # noqa: BLE001
            bad.append("%s: %s" % (name, e))
            continue
        if not same_value(got, expected):
            bad.append("%s decodes to %r" % (name, got))
        if name in MAP_REENCODE and msgpack.packb(expected) != raw:
            bad.append("%s: msgpack-python encodes %s" % (name, msgpack.packb(expected).hex()))
    check(not bad, "every §17 map example decodes (msgpack-python) to the value printed beside it",
          "; ".join(bad))
    # §7.2: the QUERY example describes tick 1235, the snapshot example's tick, and the same state
    q = SPEC_EXAMPLES["ack_query"][3]
    sn = dequantize(SPEC_EXAMPLES["snapshot"][6][0:6])
    check(q["tick"] == SPEC_EXAMPLES["snapshot"][1] and q["agent"] == sn[0]
          and abs(q["x"] - sn[1]) < 1e-9 and abs(q["y"] - sn[2]) < 1e-9
          and abs(q["vx"] - sn[4]) < 1e-9 and abs(q["vy"] - sn[5]) < 1e-9,
          "§7.2 QUERY example matches the §7.5 snapshot example of the same tick", (q, sn))
    # §7.5 snapshot example prose: agent 4194305 at (12.5, -3.25), theta 0.75, v (1.5, 0.5)...
    a = dequantize(SPEC_EXAMPLES["snapshot"][6][0:6])
    b = dequantize(SPEC_EXAMPLES["snapshot"][6][6:12])
    check(abs(a[1] - 12.5) < 1e-9 and abs(a[2] + 3.25) < 1e-9 and abs(a[3] - 0.75) < 1e-4
          and abs(a[4] - 1.5) < 1e-9 and abs(a[5] - 0.5) < 1e-9
          and abs(b[1] + 100) < 1e-9 and abs(b[2] - 42) < 1e-9 and abs(b[3] + 3.0) < 1e-4,
          "§7.5 snapshot example dequantizes to the values in its prose", (a, b))


def dequantize(e):
    """§3: id, x cm, y cm, theta int16 (pi/32768), vx cm/s, vy cm/s -> floats."""
    aid, x, y, th, vx, vy = e
    return (aid, x / 100.0, y / 100.0, th * math.pi / 32768.0, vx / 100.0, vy / 100.0)


# ---------------------------------------------------------------------------------------------
# server process

class Server:
    def __init__(self, binary, extra=()):
        self.lines = []
        self.port = None
        self.lock = threading.Lock()
        # Controllers unless a case asks for admin: ownership is part of what the spec says.
        args = [binary, "--bind", HOST, "--port", "0", "--http-port", "0", "--no-demo",
                "--anonymous-role", "controller",
                "--tick-rate", str(TICK_RATE), "--snapshot-rate", str(SNAPSHOT_RATE),
                "--world", ",".join("%g" % v for v in WORLD),
                "--client-timeout", "10000", "--log-level", "info"] + list(extra)
        print("starting: %s" % " ".join(args))
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self):
        # keep reading stderr for the whole run, so the server never blocks on a full pipe
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self.lock:
                self.lines.append(line)
                if self.port is None:
                    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
                    if m:
                        self.port = int(m.group(1))

    def wait_port(self, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                if self.port is not None:
                    return self.port
            if self.proc.poll() is not None:
                return None
            time.sleep(0.02)
        return None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

    def tail(self, n=15):
        with self.lock:
            return "\n".join("  server: " + l for l in self.lines[-n:])


# ---------------------------------------------------------------------------------------------
# client

class Client:
    def __init__(self, port, name, connect_data=1):
        self.name = name
        self.host = enet.Host(None, 1, 2, 0, 0)
        # §1: 2 channels, connect data = protocol version 1
        self.peer = self.host.connect(enet.Address(HOST.encode(), port), 2, connect_data)
        self.connected = False
        self.ever_connected = False  # a CONNECT event was seen (§1: even for refused connections)
        self.disconnect_data = None
        self.replies = []          # WELCOME / ACK / ERROR, in arrival order
        self.events = []           # (tick, code, agent, data)
        self.events_lost = 0       # EVENTS "lost" counts (§7.4)
        self.violations = []       # shape errors in what the server sent
        self.rid = 0
        self.snap_parts = {}       # tick -> {part_index: [entries]}
        self.snap_meta = {}        # tick -> (part_count, agent_total, server_time_us)
        self.complete = {}         # tick -> {id: state}
        self.partial = {}          # tick -> {id: state} for every tick seen (parts so far)
        self.latest = {}           # id -> (tick, state)
        self.max_part_count = 0
        self.max_part_agents = 0
        self.part_sizes = {}       # tick -> {part_index: agents in that part}
        self.short_parts = []      # (tick, part_index, part_count, agents): non-last part < 41
        self.max_part_bytes = 0
        self.cur_packet = b""
        self.parts_received = 0
        self.last_snap_tick = None
        self.snap_ticks_backwards = 0
        # §17: the copy of the map
        self.map = []              # obstacles (dicts), in the server's order
        self.map_version = None    # the version the copy holds; None while it holds none
        self.map_collect = None    # (version, part_count, total, next part, obstacles) being collected
        self.map_parts = 0
        self.map_changes = []      # MAP_CHANGED messages, as received
        self.map_seen_before_welcome = False
        self.welcomed_once = False

    # -- transport -------------------------------------------------------------------------
    def pump(self, timeout_ms=5):
        ev = self.host.service(timeout_ms)
        while ev is not None and ev.type != enet.EVENT_TYPE_NONE:
            self._on_event(ev)
            ev = self.host.service(0)

    def _on_event(self, ev):
        if ev.type == enet.EVENT_TYPE_CONNECT:
            self.connected = True
            self.ever_connected = True
        elif ev.type == enet.EVENT_TYPE_DISCONNECT:
            self.connected = False
            self.disconnect_data = ev.data
        elif ev.type == enet.EVENT_TYPE_RECEIVE:
            self._on_packet(ev.channelID, ev.packet.data)

    def _on_packet(self, channel, data):
        try:
            msg = msgpack.unpackb(data, raw=False)
        except Exception as e:  # noqa: BLE001
            self.violations.append("undecodable packet on channel %d: %s" % (channel, e))
            return
        if not isinstance(msg, list) or not msg or not is_int(msg[0]):
            self.violations.append("not [type, ...]: %r" % (msg,))
            return
        t = msg[0]
        if channel == 1:
            if t != SNAPSHOT:
                self.violations.append("type %d on channel 1" % t)
                return
            if len(data) > 1200:
                self.violations.append("snapshot part of %d bytes > 1200" % len(data))
            self.cur_packet = data
            self._on_snapshot(msg)
            return
        if t == SNAPSHOT:
            self.violations.append("SNAPSHOT on channel %d" % channel)
            return
        if t in (MAP, MAP_CHANGED):
            self._on_map(msg, len(data))
            return
        want = {WELCOME: 3, ACK: 4, ERROR: 5, EVENT: 5, EVENTS: 3}.get(t)
        if want is None:
            self.violations.append("unknown server message type %d" % t)
            return
        if len(msg) != want:
            self.violations.append("type %d with %d elements, want %d" % (t, len(msg), want))
            return
        if t == WELCOME:
            self.welcomed_once = True
        if t == EVENTS:
            # §7.4: [38, lost, [tick, code, agent, data, ...]], each event as if sent alone
            _, lost, flat = msg
            if not is_uint(lost) or not isinstance(flat, list) or len(flat) % 4 != 0 \
                    or (not flat and lost == 0):
                self.violations.append("EVENTS malformed: %r" % (msg,))
                return
            self.events_lost += lost
            for i in range(0, len(flat), 4):
                self._on_steerd_event([EVENT] + flat[i:i + 4])
        elif t == EVENT:
            self._on_steerd_event(msg)
        else:
            if not is_uint(msg[1]):
                self.violations.append("reply request_id not uint32: %r" % (msg,))
            if t == ERROR and msg[2] == RATE_LIMITED and (msg[4] is not None or msg[1] == 0):
                self.violations.append("ERROR 11 RATE_LIMITED names no field and echoes the "
                                       "request_id (§4, §7.3): %r" % (msg,))
            if t == ERROR and msg[4] == "":
                self.violations.append("ERROR field \"\" (§7.3: a path or nil): %r" % (msg,))
            self.replies.append(msg)

    def _obstacle_ok(self, o):
        """§17: {id, type, center, radius} or {id, type, points}, numbers as floats"""
        if not isinstance(o, dict) or not is_uint(o.get("id")) or o.get("id") == 0:
            return False
        if o.get("type") == "circle":
            c = o.get("center")
            return (isinstance(c, list) and len(c) == 2 and all(isinstance(v, float) for v in c)
                    and isinstance(o.get("radius"), float) and o["radius"] >= 0.001 and "points" not in o)
        least = {"polygon": 3, "wall": 2}.get(o.get("type"))
        pts = o.get("points")
        return (least is not None and isinstance(pts, list) and least <= len(pts) <= 256
                and all(isinstance(p, list) and len(p) == 2 and all(isinstance(v, float) for v in p)
                        for p in pts) and "center" not in o and "radius" not in o)

    def _on_map(self, msg, size):
        if size > 16384:
            self.violations.append("map message of %d bytes > 16384" % size)
        if not [r for r in self.replies if r[0] == WELCOME] and not self.welcomed_once:
            self.map_seen_before_welcome = True
        if msg[0] == MAP:
            # §17.1: [39, version, part_index, part_count, obstacle_total, obstacles]
            if len(msg) != 6 or not all(is_uint(v) for v in msg[1:5]) or not isinstance(msg[5], list) \
                    or msg[3] < 1 or msg[2] >= msg[3] or not all(self._obstacle_ok(o) for o in msg[5]):
                self.violations.append("MAP malformed: %r" % (msg[:5],))
                return
            _, version, index, count, total, obs = msg
            self.map_parts += 1
            if index == 0:
                self.map_collect = [version, count, total, 0, []]
            c = self.map_collect
            if c is None or c[0] != version or c[1] != count or c[2] != total or c[3] != index:
                self.violations.append("MAP part out of order: %r" % (msg[:5],))
                self.map_collect = None
                return
            c[3] += 1
            c[4].extend(obs)
            if c[3] == count:
                if len(c[4]) != total:
                    self.violations.append("MAP parts hold %d obstacles, obstacle_total %d" % (len(c[4]), total))
                self.map = c[4]
                self.map_version = version
                self.map_collect = None
            return
        # §17.2: [40, version, tick, removed, added]
        if len(msg) != 5 or not is_uint(msg[1]) or msg[1] == 0 or not is_uint(msg[2], 64) \
                or not isinstance(msg[3], list) or not all(is_uint(i) for i in msg[3]) \
                or not isinstance(msg[4], list) or not all(self._obstacle_ok(o) for o in msg[4]):
            self.violations.append("MAP_CHANGED malformed: %r" % (msg,))
            return
        self.map_changes.append(msg)
        _, version, tick, removed, added = msg
        if self.map_version is None or version <= self.map_version:
            return
        if version != self.map_version + 1:
            self.violations.append("MAP_CHANGED %d after version %d: a gap" % (version, self.map_version))
            self.map_version = None
            return
        ids = [o["id"] for o in self.map]
        for i in removed:
            if i not in ids:
                self.violations.append("MAP_CHANGED removes unknown obstacle %d" % i)
        self.map = [o for o in self.map if o["id"] not in removed] + list(added)
        self.map_version = version

    def _on_steerd_event(self, msg):
        _, tick, code, agent, d = msg
        if not (is_uint(tick, 64) and is_uint(code) and is_uint(agent) and is_uint(d)):
            self.violations.append("EVENT with non-integer elements: %r" % (msg,))
        if self.events and tick < self.events[-1][0]:
            self.violations.append("EVENT ticks go backwards: %d after %d"
                                   % (tick, self.events[-1][0]))
        self.events.append((tick, code, agent, d))

    def _on_snapshot(self, msg):
        if len(msg) != 7:
            self.violations.append("SNAPSHOT with %d elements" % len(msg))
            return
        _, tick, stime, pi, pc, total, agents = msg
        if not (is_uint(tick, 64) and is_uint(stime, 64) and is_uint(pi) and is_uint(pc)
                and is_uint(total) and isinstance(agents, list)):
            self.violations.append("SNAPSHOT header types: %r" % (msg[:6],))
            return
        if pc < 1 or pi >= pc:
            self.violations.append("SNAPSHOT part %d of %d" % (pi, pc))
            return
        if len(agents) % 6 != 0:
            self.violations.append("SNAPSHOT agents array of %d ints" % len(agents))
            return
        self.max_part_agents = max(self.max_part_agents, len(agents) // 6)
        self.part_sizes.setdefault(tick, {})[pi] = len(agents) // 6
        if pi < pc - 1 and len(agents) // 6 < 41:
            self.short_parts.append((tick, pi, pc, len(agents) // 6))
        self.max_part_bytes = max(self.max_part_bytes, len(self.cur_packet))
        self.parts_received += 1
        self.max_part_count = max(self.max_part_count, pc)
        if self.last_snap_tick is not None and tick < self.last_snap_tick:
            self.snap_ticks_backwards += 1
        self.last_snap_tick = tick
        entries = []
        for i in range(0, len(agents), 6):
            e = agents[i:i + 6]
            if not all(is_int(v) for v in e):
                self.violations.append("SNAPSHOT non-integer entry %r" % (e,))
                return
            aid, x, y, th, vx, vy = e
            if not (is_uint(aid) and aid != 0 and -32768 <= th <= 32767
                    and all(-(1 << 31) <= v < (1 << 31) for v in (x, y, vx, vy))):
                self.violations.append("SNAPSHOT entry out of range %r" % (e,))
                return
            entries.append(dequantize(e))
        # self-contained part: apply at once (§7.5 SHOULD)
        per_tick = self.partial.setdefault(tick, {})
        for st in entries:
            per_tick[st[0]] = st
            old = self.latest.get(st[0])
            if old is None or old[0] <= tick:
                self.latest[st[0]] = (tick, st)
        # reassembly
        meta = self.snap_meta.get(tick)
        if meta is None:
            self.snap_meta[tick] = (pc, total, stime)
        elif meta[0] != pc or meta[1] != total:
            self.violations.append("tick %d parts disagree on part_count/agent_total" % tick)
        parts = self.snap_parts.setdefault(tick, {})
        if pi in parts:
            self.violations.append("tick %d part %d received twice" % (tick, pi))
        parts[pi] = entries
        if len(parts) == pc:
            ids = [st[0] for p in parts.values() for st in p]
            if len(ids) != total:
                self.violations.append("tick %d: %d agents in all parts, agent_total %d"
                                       % (tick, len(ids), total))
            if len(set(ids)) != len(ids):
                self.violations.append("tick %d: an agent appears in two parts" % tick)
            self.complete[tick] = {st[0]: st for p in parts.values() for st in p}
            del self.snap_parts[tick]
        # bound memory
        if len(self.partial) > 600:
            for k in sorted(self.partial)[:300]:
                self.partial.pop(k, None)
                self.snap_parts.pop(k, None)
                self.snap_meta.pop(k, None)
                self.complete.pop(k, None)
                self.part_sizes.pop(k, None)

    # -- sending -----------------------------------------------------------------------------
    def send_raw(self, data, channel=0, flags=enet.PACKET_FLAG_RELIABLE):
        r = self.peer.send(channel, enet.Packet(data, flags))
        if r < 0:
            raise Fatal("%s: enet send failed" % self.name)
        self.host.flush()

    def send(self, mtype, body, rid=None):
        if rid is None:
            self.rid += 1
            rid = self.rid
        self.send_raw(msgpack.packb([mtype, rid, body]))
        return rid

    # -- waiting -----------------------------------------------------------------------------
    def wait_until(self, pred, timeout):
        end = min(time.monotonic() + timeout, DEADLINE)
        while True:
            v = pred()
            if v:
                return v
            if time.monotonic() >= end:
                return None
            self.pump(5)

    def take_reply(self, rid, timeout=5.0):
        def find():
            for i, m in enumerate(self.replies):
                if m[1] == rid:
                    return [self.replies.pop(i)]
            return None
        r = self.wait_until(find, timeout)
        return r[0] if r else None

    def request(self, mtype, body, timeout=5.0):
        """send a command, return its reply, retrying a RATE_LIMITED refusal (§4)"""
        for _ in range(20):
            rid = self.send(mtype, body)
            rep = self.take_reply(rid, timeout)
            if rep is not None and rep[0] == ERROR and rep[2] == RATE_LIMITED:
                self.wait_until(lambda: False, 0.3)
                continue
            return rep
        return rep

    def connect(self, timeout=5.0):
        return self.wait_until(lambda: self.connected, timeout)

    def hello(self):
        rep = self.request(HELLO, {"version": 1, "name": self.name})
        return rep

    def close(self):
        try:
            if self.connected:
                self.peer.disconnect()      # data 0 (§9: clients disconnect with data 0)
                self.wait_until(lambda: not self.connected, 1.0)
        except Exception:  # noqa: BLE001
            pass


def describe(rep):
    return "no reply" if rep is None else repr(rep)


def is_ack(rep, mtype):
    return rep is not None and rep[0] == ACK and rep[2] == mtype and isinstance(rep[3], dict)


def is_error(rep, code, field=Ellipsis):
    if rep is None or rep[0] != ERROR or rep[2] != code:
        return False
    if not isinstance(rep[3], str) or len(rep[3].encode()) > 255:
        return False
    if field is not Ellipsis and rep[4] != field:
        return False
    return rep[4] is None or (isinstance(rep[4], str) and len(rep[4].encode()) <= 63)


# ---------------------------------------------------------------------------------------------

def run(binary):
    check_spec_examples()
    busy_run(binary)
    map_run(binary)
    with open(MAP_PATH, "w", encoding="utf-8") as f:
        f.write(MAP_JSON)

    server = Server(binary, ["--map", MAP_PATH])
    clients = []
    try:
        port = server.wait_port(min(10.0, remaining()))
        require(port is not None, "server reports 'listening on 127.0.0.1:PORT' on stderr",
                "\n" + server.tail())
        print("server port %d" % port)
        scenario(server, port, clients)
    finally:
        for c in clients:
            if c is not None and c.connected and server.proc.poll() is not None:
                pass
        server.kill()
        try:
            os.remove(MAP_PATH)
        except OSError:
            pass


def dist_segments(a, b, c, d):
    """distance between segments ab and cd (0 when they cross)"""
    def cross(o, p, q):
        return (p[0] - o[0]) * (q[1] - o[1]) - (p[1] - o[1]) * (q[0] - o[0])
    d1, d2, d3, d4 = cross(c, d, a), cross(c, d, b), cross(a, b, c), cross(a, b, d)
    if ((d1 > 0) != (d2 > 0)) and ((d3 > 0) != (d4 > 0)):
        return 0.0
    return min(dist_point_segment(a, c, d), dist_point_segment(b, c, d),
               dist_point_segment(c, a, b), dist_point_segment(d, a, b))


def goto_checks(a):
    """§5.6: GOTO around the map's wall; the errors and the UNREACHABLE of §5.6."""
    radius = 0.3
    rep = a.request(SPAWN, {"model": "dynamic", "x": 38, "y": 40,
                            "limits": {"radius": radius, "max_speed": 12, "max_acceleration": 30}})
    require(is_ack(rep, SPAWN), "SPAWN an agent for GOTO", describe(rep))
    gid = rep[3]["agent"]
    target = [55.0, 40.0]
    n0 = len(a.events)
    rep = a.request(SET_BEHAVIOUR, {"agent": gid, "behaviour": {"kind": "goto", "target": target}})
    check(is_ack(rep, SET_BEHAVIOUR), "SET_BEHAVIOUR goto -> ACK (§5.6)", describe(rep))
    ev = a.wait_until(lambda: [e for e in a.events[n0:] if e[2] == gid and e[1] in (EV_PLANNED, EV_UNREACHABLE)],
                      5.0)
    check(ev and ev[0][1] == EV_PLANNED, "GOTO answered by a PLANNED event (6) (§7.4)", ev)
    rep = a.request(QUERY, {"agent": gid})
    require(is_ack(rep, QUERY), "QUERY the GOTO agent", describe(rep))
    q = rep[3]
    g = q.get("goto") if isinstance(q.get("goto"), dict) else {}
    check(q.get("behaviour") == "goto" and g.get("status") == "following" and g.get("reason") == "new"
          and same_value(g.get("target"), target) and g.get("partial") is False,
          "QUERY: behaviour goto, goto.status following, reason new, its target (§6.8)", q)
    route = g.get("route") if isinstance(g.get("route"), list) else []
    check(len(route) >= 2 and same_value(route[-1], target) and same_value(g.get("goal"), target),
          "the route is corners then the target, which is its goal", route)
    # every leg clears the wall and the square by the radius; the PLANNED length is the route's
    legs = list(zip([(38.0, 40.0)] + [tuple(p) for p in route[:-1]], [tuple(p) for p in route]))
    edges = [MAP_WALL] + [(MAP_SQUARE[i], MAP_SQUARE[(i + 1) % 4]) for i in range(4)]
    clear = min(dist_segments(p, r, e[0], e[1]) for p, r in legs for e in edges) if legs else 0.0
    check(clear >= radius, "every leg of the route keeps the agent's radius from the geometry", clear)
    length = sum(math.hypot(r[0] - p[0], r[1] - p[1]) for p, r in legs)
    check(ev and abs(length * 100 - ev[0][3]) < 2.0 and length > 50,
          "PLANNED data is the route's length in cm, around the wall's end (> 50 m)", (length, ev))
    done = a.wait_until(lambda: [e for e in a.events[n0:] if e[2] == gid and e[1] == EV_PATH_FINISHED], 15.0)
    check(done, "the GOTO agent goes round the wall and finishes its route (PATH_FINISHED)")
    rep = a.request(QUERY, {"agent": gid})
    if is_ack(rep, QUERY):
        check(math.hypot(rep[3]["x"] - target[0], rep[3]["y"] - target[1]) < 0.6,
              "it stopped at the target", (rep[3]["x"], rep[3]["y"]))
    # errors: a target inside the square, no target, arc cornering on a dynamic agent, goto-only keys
    rep = a.request(SET_BEHAVIOUR, {"agent": gid, "behaviour": {"kind": "goto", "target": [22, 42]}})
    check(is_error(rep, BLOCKED, "behaviour.target"),
          "GOTO target inside the geometry -> ERROR 20 BLOCKED field 'behaviour.target' (§5.6)", describe(rep))
    rep = a.request(SET_BEHAVIOUR, {"agent": gid, "behaviour": {"kind": "goto"}})
    check(is_error(rep, BAD_TARGET, "behaviour.target_agent"),
          "GOTO without a target -> ERROR 9 field 'behaviour.target_agent'", describe(rep))
    rep = a.request(SET_BEHAVIOUR, {"agent": gid, "behaviour": {"kind": "goto", "target": [50, 10],
                                                                "cornering": "arc"}})
    check(is_error(rep, MODEL_MISMATCH, "behaviour.cornering"),
          "GOTO with arc cornering on a dynamic agent -> ERROR 8 field 'behaviour.cornering'", describe(rep))
    rep = a.request(SET_BEHAVIOUR, {"agent": gid, "behaviour": {"kind": "seek", "target": [50, 10],
                                                                "node_radius": 1}})
    check(is_error(rep, BAD_FIELD, "behaviour.node_radius"),
          "node_radius with another kind -> ERROR 3 field 'behaviour.node_radius'", describe(rep))
    # a body wider than the gap under the wall... the wall reaches the world's edge, so a target
    # behind it for an agent too wide for the 15 m gap does not exist; a 3 m body (wider than the
    # largest radius class, 2 m) gets UNREACHABLE instead, as an event after the ACK
    rep = a.request(SPAWN, {"model": "kinematic", "x": 30, "y": 5, "limits": {"radius": 3}})
    wide = rep[3]["agent"] if is_ack(rep, SPAWN) else None
    n1 = len(a.events)
    rep = a.request(SET_BEHAVIOUR, {"agent": wide, "behaviour": {"kind": "goto", "target": [55, 30]}})
    check(is_ack(rep, SET_BEHAVIOUR), "GOTO of a 3 m body -> ACK", describe(rep))
    ev = a.wait_until(lambda: [e for e in a.events[n1:] if e[2] == wide and e[1] in (EV_PLANNED, EV_UNREACHABLE)],
                      5.0)
    check(ev and ev[0][1] == EV_UNREACHABLE and ev[0][3] == 0,
          "... answered by UNREACHABLE (8), data 0 (the GOTO itself) (§5.6)", ev)
    rep = a.request(QUERY, {"agent": wide})
    check(is_ack(rep, QUERY) and rep[3].get("behaviour") == "none"
          and (rep[3].get("goto") or {}).get("status") == "unreachable",
          "QUERY after UNREACHABLE: behaviour none, goto.status unreachable", describe(rep))


def scenario(server, port, clients):
    # ---- connect + HELLO/WELCOME ---------------------------------------------------------
    a = Client(port, "python-interop")
    clients.append(a)
    require(a.connect(5.0), "ENet connect (2 channels, connect data 1) succeeds")
    check(a.peer.channelCount == 2, "peer has 2 channels", a.peer.channelCount)

    rep = a.hello()
    require(rep is not None and rep[0] == WELCOME, "HELLO -> WELCOME", describe(rep))
    w = rep[2]
    require(isinstance(w, dict), "WELCOME body is a map", w)
    check(rep[1] == 1, "WELCOME echoes the HELLO request_id", rep[1])
    cid = w.get("client_id")
    check(is_uint(cid) and cid != 0, "WELCOME client_id is a non-zero uint32", cid)
    check(w.get("tick_rate") == TICK_RATE, "WELCOME tick_rate = --tick-rate", w.get("tick_rate"))
    check(w.get("snapshot_rate") == SNAPSHOT_RATE, "WELCOME snapshot_rate = --snapshot-rate",
          w.get("snapshot_rate"))
    world = w.get("world")
    check(isinstance(world, list) and len(world) == 4
          and all(isinstance(v, float) for v in world)
          and same_value(world, list(WORLD)), "WELCOME world = --world, 4 floats", world)
    if not (isinstance(world, list) and len(world) == 4):
        world = list(WORLD)
    check(is_uint(w.get("tick"), 64), "WELCOME tick is a uint64", w.get("tick"))
    check(is_uint(w.get("server_time_us"), 64), "WELCOME server_time_us is a uint64",
          w.get("server_time_us"))
    check(w.get("protocol") == 1, "WELCOME protocol = 1", w.get("protocol"))
    welcome_tick = w.get("tick") if is_uint(w.get("tick"), 64) else 0

    # ---- snapshots flow after WELCOME (even with an empty world) --------------------------
    got = a.wait_until(lambda: a.parts_received >= 3, 3.0)
    check(got, "SNAPSHOTs arrive on channel 1 after WELCOME (empty world)")
    if a.snap_meta:
        t0 = min(a.snap_meta)
        check(t0 >= welcome_tick, "first snapshot tick >= WELCOME tick", (t0, welcome_tick))

    # ---- SPAWN (dynamic) ------------------------------------------------------------------
    limits = {"max_speed": 4.0, "max_acceleration": 8, "radius": 0.25}
    rep = a.request(SPAWN, {"model": "dynamic", "x": 0, "y": 0.0, "orientation": 0.5,
                            "limits": limits})
    require(is_ack(rep, SPAWN), "SPAWN dynamic -> ACK", describe(rep))
    aid = rep[3].get("agent")
    require(is_uint(aid) and aid != 0, "SPAWN ACK carries a non-zero uint32 agent id", rep[3])
    ev = a.wait_until(lambda: [e for e in a.events if e[1] == EV_SPAWNED and e[2] == aid], 3.0)
    check(ev and ev[0][3] == cid, "SPAWNED event for the agent, data = our client_id",
          ev or a.events)

    # ---- more agents so a snapshot needs several parts (§7.5: a part is <= 1200 bytes and,
    # per §7.5/§11, <= 41 agents; 120 agents at rest take ~14 bytes each, > 1200 in all) -----
    N_EXTRA = 120
    extra = []
    pending = []

    def extra_pos(i):
        return {"model": "kinematic", "x": -45 + 2 * (i % 30), "y": -35 + 2 * (i // 30)}
    for i in range(N_EXTRA):
        pending.append(a.send(SPAWN, extra_pos(i)))
    for i, rid in enumerate(pending):
        rep = a.take_reply(rid, 5.0)
        if rep is not None and rep[0] == ERROR and rep[2] == RATE_LIMITED:
            rep = a.request(SPAWN, extra_pos(i))
        if is_ack(rep, SPAWN):
            extra.append(rep[3].get("agent"))
    check(len(extra) == N_EXTRA, "%d more SPAWNs (pipelined) are all ACKed" % N_EXTRA,
          len(extra))
    all_ids = set(extra) | {aid}
    check(len(all_ids) == N_EXTRA + 1, "agent ids are distinct", len(all_ids))

    def full_snapshot_with_all():
        for t in sorted(a.complete, reverse=True):
            if all_ids <= set(a.complete[t]):
                return t
        return None
    t_full = a.wait_until(full_snapshot_with_all, 3.0)
    check(t_full is not None, "a reassembled snapshot (all parts) holds all %d agents"
          % len(all_ids))
    check(a.max_part_count >= 2, "%d agents need >= 2 snapshot parts" % len(all_ids),
          a.max_part_count)
    check(a.max_part_bytes <= 1200, "every snapshot part is <= 1200 bytes (§1, §7.5)",
          a.max_part_bytes)
    # §7.5/§11: parts are filled by actual size (~60-70 typical agents), so no fixed agent cap;
    # every part but the last holds >= 41, and the parts of a tick add up to agent_total
    check(not a.short_parts, "every snapshot part but the last of its tick holds >= 41 agents "
          "(§7.5, §11)", a.short_parts[:5])
    print("largest part: %d agents; largest part: %d bytes" % (a.max_part_agents,
                                                                a.max_part_bytes))
    sums = [(t, sum(a.part_sizes[t].values()), a.snap_meta[t][1]) for t in a.complete
            if t in a.part_sizes and t in a.snap_meta]
    check(sums and all(got == want for _, got, want in sums),
          "the agent counts of a tick's parts add up to its agent_total (%d complete ticks)"
          % len(sums), [x for x in sums if x[1] != x[2]][:5])
    multi = [t for t in a.complete if a.snap_meta[t][0] >= 2]
    check(multi and a.max_part_agents > 41, "parts are filled beyond 41 agents when the agents "
          "are small (§7.5: about 60 to 70 typical)", a.max_part_agents)
    if t_full is not None:
        st = a.complete[t_full][aid]
        check(abs(st[1]) <= 0.0051 and abs(st[2]) <= 0.0051,
              "spawned agent appears in snapshots at its spawn point (0, 0)", st)

    # ---- SET_PATH pingpong ----------------------------------------------------------------
    path = [[0, 0], [6, 0], [6, 6]]
    n_events_before = len(a.events)
    rep = a.request(SET_PATH, {"agent": aid, "points": path, "radius": 1.0, "mode": "pingpong",
                               "cornering": "none"})
    require(is_ack(rep, SET_PATH) and rep[3].get("agent") == aid,
            "SET_PATH pingpong -> ACK {agent}", describe(rep))

    # follow it for a while: positions from snapshots, events on channel 0
    samples = []
    last_tick = [None]

    def collect():
        ent = a.latest.get(aid)
        if ent and ent[0] != last_tick[0]:
            last_tick[0] = ent[0]
            samples.append(ent)
        evs = [e for e in a.events[n_events_before:] if e[2] == aid]
        rev = [e for e in evs if e[1] == EV_REVERSED]
        # both ends: first reversal at node 2, then at node 0
        return len(rev) >= 2
    a.wait_until(collect, min(20.0, max(1.0, remaining() - 25)))
    evs = [e for e in a.events[n_events_before:] if e[2] == aid]
    print("events for the agent: %r" % evs)
    check(len(samples) > 20, "many snapshot samples of the moving agent", len(samples))
    if samples:
        xs = [s[1][1] for s in samples]
        ys = [s[1][2] for s in samples]
        moved = max(math.hypot(x - xs[0], y - ys[0]) for x, y in zip(xs, ys))
        check(moved > 4.0, "the agent moves along the path (> 4 m from its start)", moved)
        worst = max(dist_polyline((x, y), path) for x, y in zip(xs, ys))
        check(worst < 2.5, "the agent stays within 2.5 m of the path's segments", worst)
        inside = all(world[0] <= x <= world[2] and world[1] <= y <= world[3]
                     for x, y in zip(xs, ys))
        check(inside, "the agent stays inside the world bounds")
        reach1 = min(math.hypot(x - 6, y) for x, y in zip(xs, ys))
        reach2 = min(math.hypot(x - 6, y - 6) for x, y in zip(xs, ys))
        check(reach1 < 1.5 and reach2 < 1.5, "the agent comes within the path radius of "
              "nodes 1 and 2", (reach1, reach2))
        thetas = [s[1][3] for s in samples]
        check(all(-math.pi <= t < math.pi for t in thetas), "decoded theta lies in [-pi, pi)")
        speeds = [math.hypot(s[1][4], s[1][5]) for s in samples]
        check(max(speeds) <= limits["max_speed"] + 0.02 and max(speeds) > 1.0,
              "snapshot speeds are non-zero and <= max_speed", max(speeds))
        # theta follows velocity (facing look_where_going by default) once at speed
        fast = [s[1] for s in samples if math.hypot(s[1][4], s[1][5]) > 2.0]
        if fast:
            # turning is rate-limited (max_rotation), so only most samples face their velocity
            offs = sorted(angle_diff(st[3], math.atan2(st[5], st[4])) for st in fast)
            med = offs[len(offs) // 2]
            check(med < 0.5, "theta ~ atan2(vy, vx) (look_where_going) for most fast samples",
                  med)
    wps = [e for e in evs if e[1] == EV_WAYPOINT]
    revs = [e for e in evs if e[1] == EV_REVERSED]
    check(any(e[3] == 1 for e in wps), "WAYPOINT event with data 1 (node 1 reached)", wps)
    check(all(0 <= e[3] <= 2 for e in wps), "WAYPOINT data are node indexes 0..2", wps)
    check(len(revs) >= 1 and revs[0][3] == 2, "first REVERSED event at end node 2", revs)
    check(len(revs) >= 2 and revs[1][3] == 0, "second REVERSED event at end node 0", revs)
    check(all(e[1] in (EV_WAYPOINT, EV_REVERSED) for e in evs),
          "only WAYPOINT/REVERSED events while ping-ponging", evs)
    if wps and revs:
        w1 = [e for e in wps if e[3] == 1]
        check(not w1 or w1[0][0] <= revs[0][0], "node 1 WAYPOINT comes before the REVERSED "
              "at node 2", (w1[:1], revs[:1]))
    check(all(e[0] > rep_tick for e in evs for rep_tick in [welcome_tick]),
          "event ticks are after the WELCOME tick")
    # §5.4: the agent starts on node 0, so node 0 is reached at once (WAYPOINT 0, no reversal);
    # an end node gives WAYPOINT then REVERSED in the same tick with the same data
    seq = [(e[1], e[3]) for e in evs]
    want = [(EV_WAYPOINT, 0), (EV_WAYPOINT, 1), (EV_WAYPOINT, 2), (EV_REVERSED, 2),
            (EV_WAYPOINT, 1), (EV_WAYPOINT, 0), (EV_REVERSED, 0)]
    check(seq[:len(want)] == want, "ping-pong events: W0 (start on node 0), W1, W2, R2, W1, W0, R0 "
          "(§5.4)", seq)
    pairs_ok = all(i > 0 and evs[i - 1][1] == EV_WAYPOINT and evs[i - 1][0] == e[0]
                   and evs[i - 1][3] == e[3]
                   for i, e in enumerate(evs) if e[1] == EV_REVERSED)
    check(revs and pairs_ok, "every REVERSED comes right after a WAYPOINT of the same tick and "
          "node (§5.4, §7.4)", evs)

    # ---- PING ----------------------------------------------------------------------------
    ct = int(time.monotonic() * 1e6)
    t_send = time.monotonic()
    rep = a.request(PING, {"client_time_us": ct})
    rtt = time.monotonic() - t_send
    check(is_ack(rep, PING), "PING -> ACK", describe(rep))
    if is_ack(rep, PING):
        b = rep[3]
        check(b.get("client_time_us") == ct, "PING ACK echoes client_time_us", b)
        check(is_uint(b.get("server_time_us"), 64) and b["server_time_us"] >= w["server_time_us"],
              "PING ACK server_time_us is a uint64, not before WELCOME's", b)
        check(is_uint(b.get("tick"), 64) and b["tick"] >= welcome_tick,
              "PING ACK tick is a uint64, not before WELCOME's", b)
        print("ping rtt %.1f ms" % (rtt * 1000))
    big = (1 << 64) - 1
    rep = a.request(PING, {"client_time_us": big})
    check(is_ack(rep, PING) and rep[3].get("client_time_us") == big,
          "PING echoes a full uint64 client_time_us", describe(rep))

    # ---- errors: wrong field types, bad values --------------------------------------------
    rep = a.request(QUERY, {"agent": float(aid)})
    check(is_error(rep, BAD_FIELD, "agent"),
          "QUERY with agent as a float -> ERROR 3 BAD_FIELD field 'agent' (§2)", describe(rep))
    rep = a.request(SET_PATH, {"agent": aid, "points": path, "radius": "1", "mode": "pingpong",
                               "cornering": "none"})
    check(is_error(rep, BAD_FIELD, "radius"),
          "SET_PATH radius as a string -> ERROR 3 field 'radius'", describe(rep))
    rep = a.request(SET_PATH, {"agent": aid, "points": [[0, 0], [1, "x"]], "radius": 1,
                               "mode": "pingpong", "cornering": "none"})
    check(is_error(rep, BAD_FIELD, "points[1][1]"),
          "SET_PATH a point coordinate as a string -> ERROR 3 field 'points[1][1]'",
          describe(rep))
    rep = a.request(SET_PATH, {"agent": aid, "points": [[0, 0], [5, 0], [world[2] + 1, 0]],
                               "radius": 1, "mode": "once", "cornering": "none"})
    check(is_error(rep, BAD_FIELD, "points[2]"),
          "SET_PATH a point outside the world -> ERROR 3 field 'points[2]' (§6.5)",
          describe(rep))
    rep = a.request(SET_PATH, {"agent": aid, "points": path, "radius": 1, "mode": "PingPong",
                               "cornering": "none"})
    check(is_error(rep, BAD_FIELD, "mode"), "enum is case-sensitive: mode 'PingPong' -> "
          "ERROR 3 field 'mode'", describe(rep))
    rep = a.request(SET_PARAMS, {"agent": aid, "params": {"slow_radus": 3}})
    check(is_error(rep, BAD_FIELD) and isinstance(rep[4], str) and "slow_radus" in rep[4],
          "unknown key params.slow_radus -> ERROR 3 naming it", describe(rep))
    rep = a.request(SET_PARAMS, {"agent": aid, "params": {"time_to_target": 0}})
    check(is_error(rep, BAD_FIELD, "params.time_to_target"),
          "time_to_target 0 -> ERROR 3 field 'params.time_to_target' (§7.3 example)",
          describe(rep))
    rep = a.request(SET_PATH, {"agent": aid, "points": path, "radius": 1, "mode": "loop",
                               "cornering": "arc"})
    check(is_error(rep, 8), "arc cornering on a dynamic agent -> ERROR 8 MODEL_MISMATCH",
          describe(rep))
    rep = a.request(SET_BEHAVIOUR, {"agent": aid, "behaviour": {"kind": "pursue"}})
    check(is_error(rep, 9), "pursue without target_agent -> ERROR 9 BAD_TARGET", describe(rep))
    rep = a.request(SET_PARAMS, {"agent": aid, "limits": {"max_speed": float("nan")}})
    check(is_error(rep, BAD_FIELD, "limits.max_speed"), "NaN max_speed -> ERROR 3 field "
          "'limits.max_speed'", describe(rep))
    rep = a.request(QUERY, {"agent": 0x7FFFFFFF})
    check(is_error(rep, NO_SUCH_AGENT, "agent"),
          "QUERY an unknown id -> ERROR 6 NO_SUCH_AGENT field 'agent' (§7.3 example)",
          describe(rep))
    rep = a.request(DESPAWN, {"agent": 0x7FFFFFFF})
    check(is_error(rep, NO_SUCH_AGENT, "agent"),
          "DESPAWN an unknown id -> ERROR 6 NO_SUCH_AGENT field 'agent'", describe(rep))
    rid = a.send(77, {})
    rep = a.take_reply(rid)
    check(is_error(rep, UNKNOWN_TYPE, "type"), "type 77 -> ERROR 2 UNKNOWN_TYPE field 'type'",
          describe(rep))

    # ---- QUERY vs snapshot of the same tick -----------------------------------------------
    # §6.8: the QUERY ACK's tick T is the last completed tick; its motion is the state after T,
    # which snapshot T carries (snapshot_rate = tick_rate here, so nearly every tick has one,
    # §7.5). PINGs around it report the last completed tick too, so they bracket T.
    compared = False
    for attempt in range(8):
        r1 = a.send(PING, {"client_time_us": 1})
        rq = a.send(QUERY, {"agent": aid})
        r2 = a.send(PING, {"client_time_us": 2})
        p1, q, p2 = a.take_reply(r1), a.take_reply(rq), a.take_reply(r2)
        if not (is_ack(p1, PING) and is_ack(q, QUERY) and is_ack(p2, PING)):
            check(False, "PING/QUERY/PING -> ACKs", (p1, q, p2))
            break
        T = q[3].get("tick")
        if not check(is_uint(T, 64) and p1[3]["tick"] <= T <= p2[3]["tick"],
                     "QUERY ACK tick is a uint64 between the ticks of the PINGs sent around it",
                     (p1[3]["tick"], T, p2[3]["tick"])):
            break
        snap = a.wait_until(lambda: a.partial.get(T, {}).get(aid), 2.0)
        if not snap:
            print("no snapshot of tick %d for the agent; trying again" % T)
            continue
        qb = q[3]
        print("QUERY (tick %d): %r" % (T, qb))
        print("snapshot tick %d: %r" % (T, snap))
        keys = ("agent", "tick", "model", "x", "y", "orientation", "vx", "vy", "rotation",
                "behaviour", "arrived", "path_node", "limits", "owner", "tuning")
        check(all(k in qb for k in keys), "QUERY ACK has every §6.8 key",
              [k for k in keys if k not in qb])
        tun = qb.get("tuning", {})
        check(isinstance(tun, dict) and same_value(tun.get("avoid_weight"), 0.0)
              and same_value(tun.get("avoid_horizon"), 3.0) and tun.get("avoid_priority") == 0
              and same_value(tun.get("wall_lookahead"), 1.0) and same_value(tun.get("wall_margin"), 0.25)
              and same_value(tun.get("stuck_time"), 0.0) and tun.get("stuck_reaction") == "report"
              and tun.get("arrival") == "point",
              "QUERY: tuning has the §5.2 defaults of an agent spawned without them", tun)
        check(qb.get("agent") == aid and qb.get("model") == "dynamic"
              and qb.get("behaviour") == "follow_path" and qb.get("owner") == cid
              and qb.get("arrived") in (True, False)
              and qb.get("path_node") in (0, 1, 2),
              "QUERY: agent, model dynamic, behaviour follow_path, owner = our client_id, "
              "path_node in 0..2", qb)
        lim = qb.get("limits", {})
        check(isinstance(lim, dict) and same_value(lim.get("max_speed"), 4.0)
              and same_value(lim.get("max_acceleration"), 8.0)
              and same_value(lim.get("radius"), 0.25)
              and same_value(lim.get("max_rotation"), 4.0)
              and same_value(lim.get("max_angular_acceleration"), 16.0),
              "QUERY limits = spawned limits + §5.1 defaults", lim)
        tol = 0.005 + 1e-4
        dx = abs(qb["x"] - snap[1])
        dy = abs(qb["y"] - snap[2])
        dvx = abs(qb["vx"] - snap[4])
        dvy = abs(qb["vy"] - snap[5])
        dth = angle_diff(qb["orientation"], snap[3])
        check(dx <= tol and dy <= tol, "QUERY x, y = snapshot x, y within 0.5 cm", (dx, dy))
        check(dvx <= tol and dvy <= tol, "QUERY vx, vy = snapshot within 0.5 cm/s", (dvx, dvy))
        check(dth <= math.pi / 65536 + 1e-5, "QUERY orientation = snapshot theta within "
              "pi/65536 rad", dth)
        check(-math.pi < qb["orientation"] <= math.pi, "QUERY orientation in (-pi, pi]",
              qb["orientation"])
        compared = True
        break
    check(compared, "QUERY compared with the snapshot of the same tick")

    # ---- second clients: version mismatch, NOT_WELCOMED, NOT_OWNER, channel 1, malformed --
    bad = Client(port, "bad-version", connect_data=2)
    clients.append(bad)
    bad.wait_until(lambda: bad.disconnect_data is not None, 3.0)
    check(bad.ever_connected and bad.disconnect_data == DISC_VERSION,
          "connect data 2 -> ENet CONNECT event, then DISCONNECT with data 4 (§1)",
          (bad.ever_connected, bad.disconnect_data))

    c = Client(port, "python-second")
    clients.append(c)
    require(c.connect(5.0), "second client connects")
    rid = c.send(PING, {"client_time_us": 5}, rid=4242)
    rep = c.take_reply(rid)
    check(is_error(rep, NOT_WELCOMED) and rep[1] == 4242,
          "command before HELLO -> ERROR 5 NOT_WELCOMED with its request_id", describe(rep))
    rep = c.request(HELLO, {"version": 1, "name": "x" * 65})
    check(is_error(rep, BAD_FIELD, "name"), "HELLO name of 65 bytes -> ERROR 3 field 'name'",
          describe(rep))
    rep = c.hello()
    check(rep is not None and rep[0] == WELCOME and rep[2].get("client_id") not in (None, cid),
          "second client WELCOMEd with another client_id", describe(rep))
    cid2 = rep[2].get("client_id") if rep and rep[0] == WELCOME else None
    rep = c.hello()
    check(rep is not None and rep[0] == WELCOME and rep[2].get("client_id") == cid2,
          "repeated HELLO -> WELCOME with the same client_id", describe(rep))
    rep = c.request(STOP, {"agent": aid})
    check(is_error(rep, NOT_OWNER), "STOP another client's agent -> ERROR 12 NOT_OWNER",
          describe(rep))
    rep = c.request(QUERY, {"agent": aid})
    check(is_ack(rep, QUERY) and rep[3].get("owner") == cid,
          "any client may QUERY; owner is the spawning client", describe(rep))
    rep = c.request(SPAWN, {"model": "heading", "x": 20, "y": 20})
    check(is_ack(rep, SPAWN), "second client SPAWNs a heading agent", describe(rep))
    aid2 = rep[3].get("agent") if is_ack(rep, SPAWN) else None
    ev = a.wait_until(lambda: [e for e in a.events if e[1] == EV_SPAWNED and e[2] == aid2], 3.0)
    check(ev and ev[0][3] == cid2, "first client gets the SPAWNED event of the second "
          "client's agent with data = its client_id (events go to every client)", ev)

    # malformed packets (§4: a peer is disconnected only beyond 20 of them in 10 s; these are
    # 17, the 65-byte name above included). §7.3: the request_id is
    # echoed whenever the packet starts as an array of >= 2 elements whose second element is a
    # uint32 (whatever the first element and whatever follows), else it is 0; field is nil for
    # faults of the packet as a whole
    cases = [
        (b"\xc1", 0, None, "byte 0xc1 (never used in msgpack)"),
        (b"\x93\x09", 0, Ellipsis, "truncated before the request_id"),
        (b"\x93\x09\x05", 5, Ellipsis, "truncated after request_id 5"),
        (msgpack.packb([PING, 99, {"client_time_us": 1}]) + b"\x00", 99, None,
         "trailing bytes after a PING with request_id 99"),
        (msgpack.packb([PING, 5, {}, 1]), 5, None, "[9, 5, {}, 1]: 4 elements"),
        (msgpack.packb([PING, 6]), 6, None, "[9, 6]: 2 elements"),
        (msgpack.packb(["x", 7, {}]), 7, "type", '["x", 7, {}]: type not an integer'),
        (msgpack.packb([PING, -8, {}]), 0, "request_id", "[9, -8, {}]: negative request_id"),
        (msgpack.packb([PING, 9.0, {}]), 0, "request_id", "[9, 9.0, {}]: float request_id"),
        (msgpack.packb([PING]), 0, None, "[9]: 1 element"),
    ]
    for raw, want_rid, want_field, what in cases:
        c.send_raw(raw)
        rep = c.take_reply(want_rid)
        check(is_error(rep, BAD_MESSAGE, want_field),
              "malformed (%s) -> ERROR 1 BAD_MESSAGE, request_id %d%s (§7.3)"
              % (what, want_rid, "" if want_field is Ellipsis else ", field %r" % (want_field,)),
              describe(rep) + (" other replies: %r" % c.replies if c.replies else ""))
    c.send_raw(msgpack.packb({"type": 9}))
    rep = c.take_reply(0)
    check(is_error(rep, BAD_MESSAGE, None), "a map instead of an array -> ERROR 1, field nil",
          describe(rep))
    rid = c.send(PING, [1, 2, 3])
    rep = c.take_reply(rid)
    check(is_error(rep, BAD_MESSAGE, "body") and rep[1] == rid,
          "body not a map -> ERROR 1 with the request_id, field 'body'", describe(rep))
    rid = c.send(QUERY, {"agent": aid, 5: 1})
    rep = c.take_reply(rid)
    check(is_error(rep, BAD_FIELD, "body") and rep[1] == rid,
          "a body key that is not a string -> ERROR 3 field 'body' (§7.3)", describe(rep))
    rid = c.send(SET_PATH, {"agent": aid, "points": [[0, 0]], "radius": 1, "mode": "once",
                            "cornering": "none", "params": {"slow_radus": 3}})
    rep = c.take_reply(rid)
    check(is_error(rep, BAD_FIELD, "params.slow_radus"),
          "unknown nested key -> ERROR 3 with its full path 'params.slow_radus' (§7.3)",
          describe(rep))
    rid = c.send(SPAWN, {"model": "dynamic", "x": 0, "y": 0,
                         "behaviour": {"kind": "seek", "target": [1, "y"]}})
    rep = c.take_reply(rid)
    check(is_error(rep, BAD_FIELD, "behaviour.target[1]"),
          "bad array element in a nested map -> ERROR 3 field 'behaviour.target[1]' (§7.3)",
          describe(rep))
    # §1: commands must be reliable; an unreliable packet on channel 0 is not applied: ERROR 1
    # BAD_MESSAGE, request_id 0, field nil (on loopback it is not lost)
    c.send_raw(msgpack.packb([PING, 4343, {"client_time_us": 77}]), channel=0, flags=0)
    rep = c.take_reply(0)
    check(is_error(rep, BAD_MESSAGE, None) and rep[1] == 0,
          "an unreliable PING on channel 0 -> ERROR 1 BAD_MESSAGE, request_id 0, field nil (§1)",
          describe(rep))
    # a packet on channel 1 (§1)
    c.send_raw(msgpack.packb([PING, 7, {"client_time_us": 1}]), channel=1)
    rep = c.take_reply(0)
    check(is_error(rep, BAD_MESSAGE, None) and rep[1] == 0,
          "a packet on channel 1 -> ERROR 1 BAD_MESSAGE, request_id 0, field nil (§1)",
          describe(rep))
    check(not [r for r in c.replies if r[1] == 7], "the channel-1 command was not applied",
          c.replies)
    c.wait_until(lambda: False, 0.2)
    check(c.connected, "second client still connected after malformed packets and a packet on "
          "channel 1 (§4, §9: fewer than the 20 in 10 s that get a peer disconnected)",
          c.disconnect_data)

    # disconnect the second client: §4 (step 6) and §12 say its agents stay
    c.close()
    check(not c.connected, "second client disconnects cleanly")
    a.wait_until(lambda: False, 0.5)
    rep = a.request(QUERY, {"agent": aid2}) if aid2 else None
    despawned = [e for e in a.events if e[1] == EV_DESPAWNED and e[2] == aid2]
    check(is_ack(rep, QUERY) and not despawned,
          "§4.6: a disconnected client's agent stays in the world (no DESPAWNED)",
          (describe(rep), despawned))

    # ---- GOTO (§5.6) ---------------------------------------------------------------------------
    goto_checks(a)

    # ---- shutdown -----------------------------------------------------------------------
    viol = a.violations + c.violations
    check(not viol, "every server message had the shape the spec gives", viol[:5])
    check(a.snap_ticks_backwards == 0, "snapshot ticks never go backwards on channel 1")
    require(a.connected, "main client still connected before shutdown", a.disconnect_data)
    server.proc.send_signal(signal.SIGTERM)
    a.wait_until(lambda: a.disconnect_data is not None, min(5.0, max(0.5, remaining())))
    check(a.disconnect_data == DISC_SHUTDOWN,
          "SIGTERM: client gets a disconnect with reason 1 (server shutting down)",
          a.disconnect_data)
    try:
        rc = server.proc.wait(timeout=max(0.5, min(10.0, remaining())))
    except subprocess.TimeoutExpired:
        rc = None
    check(rc == 0, "server exits 0 after SIGTERM", rc)


# ---------------------------------------------------------------------------------------------
# §17: the map on the wire, from a second server run with a map file and admin clients

MAP_FILE = {"format": "steerd-map", "version": 1, "obstacles": [
    # a dead end opening toward -x: its cavity is x in [4, 5], y in [-2, 2]
    {"id": 5, "type": "polygon",
     "points": [[4, -3], [6, -3], [6, 3], [4, 3], [4, 2], [5, 2], [5, -2], [4, -2]]},
    {"id": 9, "type": "circle", "center": [-20.5, 10.25], "radius": 1.5}]}


def dist_to_obstacle(p, o):
    if o["type"] == "circle":
        return math.hypot(p[0] - o["center"][0], p[1] - o["center"][1]) - o["radius"]
    pts = o["points"] + ([o["points"][0]] if o["type"] == "polygon" else [])
    return dist_polyline(p, pts)


def busy_run(binary):
    """§4 Command queue: one command a tick (--command-budget-us 1, --command-spare 0) and room
    for 4 waiting: of 50 PINGs sent back to back most find the queue full."""
    server = Server(binary, ["--command-queue", "4", "--command-budget-us", "1", "--command-spare", "0",
                             "--rate-limit", "1000000", "--rate-burst", "1000000"])
    a = None
    try:
        port = server.wait_port(min(10.0, remaining()))
        require(port is not None, "busy server reports its port", "\n" + server.tail())
        a = Client(port, "python-busy")
        require(a.connect(5.0) and a.hello()[0] == WELCOME, "busy server: HELLO -> WELCOME")
        rids = []
        for i in range(50):  # one flush: they arrive together
            a.rid += 1
            rids.append(a.rid)
            a.peer.send(0, enet.Packet(msgpack.packb([PING, a.rid, {"client_time_us": i}]),
                                       enet.PACKET_FLAG_RELIABLE))
        a.host.flush()
        got = a.wait_until(lambda: len(a.replies) >= 50, 10.0)
        replies = list(a.replies)
        by_rid = {}
        for m in replies:
            by_rid.setdefault(m[1], []).append(m)
        check(got and sorted(by_rid) == sorted(rids) and all(len(v) == 1 for v in by_rid.values()),
              "§10: each of 50 pipelined PINGs gets exactly one reply", [m[:3] for m in replies])
        busy = [m for m in replies if m[0] == ERROR]
        check(len(busy) >= 25 and all(is_error(m, BUSY, None) and m[3].startswith("busy") for m in busy),
              "§4, §8: the PINGs that find the queue full get ERROR 21 BUSY with their request_id, field nil",
              busy[:3])
        acks = [m[1] for m in replies if m[0] == ACK]
        check(len(acks) >= 4 and acks == sorted(acks) and all(is_ack(m, PING) for m in replies if m[0] == ACK),
              "§10: the queued PINGs are ACKed in the order sent", acks)
        rep = a.request(PING, {"client_time_us": 1})
        check(is_ack(rep, PING), "§4: once answered, the next command is queued and ACKed", describe(rep))
    finally:
        if a is not None:
            a.close()
        server.kill()


def map_run(binary):
    import json
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(MAP_FILE, f)
        path = f.name
    server = Server(binary, ["--map", path, "--anonymous-role", "admin"])
    try:
        port = server.wait_port(min(10.0, remaining()))
        require(port is not None, "map server reports its port", "\n" + server.tail())
        map_scenario(port)
    finally:
        server.kill()
        os.unlink(path)


def map_scenario(port):
    a = Client(port, "python-map")
    b = Client(port, "python-map-2")
    try:
        require(a.connect(5.0) and b.connect(5.0), "map server: ENet connects")
        require(a.hello()[0] == WELCOME and b.hello()[0] == WELCOME, "map server: HELLO -> WELCOME")
        got = a.wait_until(lambda: a.map_version is not None, 3.0)
        check(got and a.map_version == 2 and not a.map_seen_before_welcome,
              "§17.1: MAP follows WELCOME; a file of 2 obstacles is version 2", (a.map_version,))
        check(a.map == MAP_FILE["obstacles"], "§17.1: the MAP holds the file's obstacles, in order, exactly",
              a.map)
        b.wait_until(lambda: b.map_version == 2, 3.0)
        # an admin closes a door: ACK, then MAP_CHANGED to both
        door = {"id": 42, "type": "wall", "points": [[-10.0, -5.0], [-10.0, 5.0]]}
        rep = a.request(ADD_OBSTACLE, door)
        check(is_ack(rep, ADD_OBSTACLE) and rep[3] == {"obstacle": 42, "version": 3, "moved": 0},
              "§17.3: ADD_OBSTACLE -> ACK {obstacle, version, moved}", describe(rep))
        b.wait_until(lambda: b.map_version == 3, 3.0)
        a.wait_until(lambda: a.map_version == 3, 3.0)
        check(b.map_version == 3 and b.map[-1] == door and a.map == b.map,
              "§17.2: every client applies MAP_CHANGED to version 3, the door last", (b.map_version, b.map[-1:]))
        rep = a.request(REMOVE_OBSTACLE, {"id": 5})
        check(is_ack(rep, REMOVE_OBSTACLE) and rep[3] == {"obstacle": 5, "version": 4},
              "§17.3: REMOVE_OBSTACLE -> ACK {obstacle, version}", describe(rep))
        b.wait_until(lambda: b.map_version == 4, 3.0)
        check([o["id"] for o in b.map] == [9, 42], "§17.2: removal keeps the order of the rest",
              [o["id"] for o in b.map])
        # errors (§17.3), each with its field; the map does not change
        cases = [
            (ADD_OBSTACLE, {"id": 42, "type": "circle", "center": [0, 20], "radius": 1}, OBSTACLE_EXISTS, "id"),
            (REMOVE_OBSTACLE, {"id": 77}, NO_SUCH_OBSTACLE, "id"),
            (ADD_OBSTACLE, {"id": 43, "type": "wall", "points": [[0, 0], [0, 99]]}, BAD_FIELD, "points[1]"),
            (ADD_OBSTACLE, {"id": 43, "type": "polygon", "points": [[0, 0], [1, 1], [2, 2]]}, BAD_FIELD,
             "points"),
            (ADD_OBSTACLE, {"id": 43, "type": "circle", "center": [0, 0]}, BAD_FIELD, "radius"),
            (ADD_OBSTACLE, {"id": 43, "type": "circle", "center": [0, 0], "radius": 1, "colour": 3}, BAD_FIELD,
             "colour"),
            (ADD_OBSTACLE, {"id": 0, "type": "circle", "center": [0, 0], "radius": 1}, BAD_FIELD, "id"),
            (ADD_OBSTACLE, {"id": 43, "type": "wall", "points": [[i % 50, 0] for i in range(257)]}, BAD_FIELD,
             "points"),
        ]
        bad = []
        for mtype, body, code, field in cases:
            rep = a.request(mtype, body)
            if not is_error(rep, code, field):
                bad.append("%r -> %s" % (body, describe(rep)))
        check(not bad, "§17.3: every bad map command gets its error and field", bad)
        check(b.map_version == 4, "refused map commands change nothing", b.map_version)
        # an obstacle on top of an agent moves it out (§17.3)
        rep = a.request(SPAWN, {"model": "dynamic", "x": 20, "y": 20, "limits": {"radius": 0.5}})
        require(is_ack(rep, SPAWN), "map server: SPAWN", describe(rep))
        agent = rep[3]["agent"]
        crate = {"id": 50, "type": "polygon", "points": [[18.0, 18.0], [22.0, 18.0], [22.0, 22.0], [18.0, 22.0]]}
        rep = a.request(ADD_OBSTACLE, crate)
        check(is_ack(rep, ADD_OBSTACLE) and rep[3].get("moved") == 1,
              "§17.3: an obstacle over an agent moves it (moved 1)", describe(rep))
        rep = a.request(QUERY, {"agent": agent})
        pos = (rep[3]["x"], rep[3]["y"]) if is_ack(rep, QUERY) else (20, 20)
        outside = not (18 <= pos[0] <= 22 and 18 <= pos[1] <= 22)
        check(outside and dist_to_obstacle(pos, crate) >= 0.5 - 1e-3,
              "§17.3: the agent stands clear of the new obstacle", pos)
        # STUCK (§7.4, §17.4): seek into the dead end with stuck_time 0.5 s, no feeler
        rep = a.request(ADD_OBSTACLE, MAP_FILE["obstacles"][0])
        check(is_ack(rep, ADD_OBSTACLE), "the dead end back", describe(rep))
        rep = a.request(SPAWN, {"model": "dynamic", "x": 0, "y": 0,
                                "behaviour": {"kind": "seek", "target": [12, 0],
                                              "params": {"stuck_time": 0.5, "wall_lookahead": 0}}})
        require(is_ack(rep, SPAWN), "SPAWN a seeker with stuck_time", describe(rep))
        seeker = rep[3]["agent"]
        ev = a.wait_until(lambda: [e for e in a.events if e[1] == EV_STUCK and e[2] == seeker], 5.0)
        check(ev and ev[0][3] == 0, "§7.4: a seek into a dead end reports STUCK (code 6, data 0)", a.events[-5:])
        rep = a.request(SET_PARAMS, {"agent": seeker, "params": {"avoid_weight": 1.5, "avoid_priority": 300}})
        check(is_error(rep, BAD_FIELD, "params.avoid_priority"), "§5.2: avoid_priority above 255 is BAD_FIELD",
              describe(rep))
        rep = a.request(SET_PARAMS, {"agent": seeker, "params": {"avoid_weight": 1.5, "arrival": "land"}})
        check(is_error(rep, BAD_FIELD, "params.arrival"), "§5.2: an arrival other than point, settle or pass is BAD_FIELD",
              describe(rep))
        rep = a.request(SET_PARAMS, {"agent": seeker, "params": {"avoid_weight": 1.5, "avoid_priority": 3,
                                                                 "stuck_reaction": "give_up", "arrival": "settle"}})
        check(is_ack(rep, SET_PARAMS), "§5.2: avoidance, stuck and arrival keys in SET_PARAMS", describe(rep))
        rep = a.request(QUERY, {"agent": seeker})
        tun = rep[3].get("tuning", {}) if is_ack(rep, QUERY) else {}
        check(same_value(tun.get("avoid_weight"), 1.5) and tun.get("avoid_priority") == 3
              and tun.get("stuck_reaction") == "give_up" and same_value(tun.get("stuck_time"), 0.5)
              and same_value(tun.get("wall_lookahead"), 0.0) and tun.get("arrival") == "settle",
              "§6.8: QUERY's tuning reports the agent's avoidance and stuck parameters as set", describe(rep))
        # a controller may not change the map: none here (anonymous admins); a repeated HELLO resends the map
        parts = b.map_parts
        b.hello()
        b.wait_until(lambda: b.map_parts > parts and b.map_collect is None, 3.0)
        check(b.map_parts > parts and b.map == a.map, "§17.1: a repeated HELLO sends the whole map again",
              (parts, b.map_parts))
        viol = a.violations + b.violations
        check(not viol, "every map message had the shape §17 gives", viol[:5])
    finally:
        a.close()
        b.close()


def main():
    if len(sys.argv) != 2:
        print("usage: %s /path/to/steerd" % sys.argv[0])
        print("0 passed, 1 failed")
        return 2
    binary = sys.argv[1]
    if not os.access(binary, os.X_OK):
        print("not an executable: %s" % binary)
        print("0 passed, 1 failed")
        return 2

    def on_alarm(signum, frame):
        raise Fatal("overall timeout of %.0f s" % OVERALL_TIMEOUT)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(OVERALL_TIMEOUT) + 5)
    global failed
    try:
        run(binary)
    except Fatal as e:
        print("ABORT: %s" % e)
        failed += 0 if failed else 1
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        print("ABORT: unexpected %s: %s" % (type(e).__name__, e))
        failed += 1
    finally:
        signal.alarm(0)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
