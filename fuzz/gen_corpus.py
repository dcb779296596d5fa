#!/usr/bin/env python3
"""Writes the seed corpus of fuzz/corpus/<target>/: every hex example of
protocol/PROTOCOL.md (<!-- example: name --> markers) plus hand-made edge cases.

Run it again when PROTOCOL.md's examples change: python3 fuzz/gen_corpus.py
It only writes the seed_*/ex_* files; entries added by fuzzing runs (named by
their SHA-1) are left alone. Needs nothing but the Python standard library."""
import os
import re
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")

COMMAND_EXAMPLES = {"hello", "spawn", "despawn", "set_behaviour", "set_path", "set_params", "stop", "query", "ping",
                    "set_behaviour_goto"}


# ---- A minimal msgpack writer with control over the encodings ----------------

class F32(float):
    pass


class F64(float):
    pass


class Raw(bytes):
    """Bytes written as they are."""


class Int:
    """An integer in a chosen encoding: fmt is a msgpack marker byte (0xcc..0xd3)."""

    def __init__(self, v, marker):
        self.v, self.marker = v, marker


class Nil:
    pass


def pack(o):
    if isinstance(o, Raw):
        return bytes(o)
    if o is None or isinstance(o, Nil):
        return b"\xc0"
    if o is True:
        return b"\xc3"
    if o is False:
        return b"\xc2"
    if isinstance(o, Int):
        fmt = {0xcc: ">B", 0xcd: ">H", 0xce: ">I", 0xcf: ">Q", 0xd0: ">b", 0xd1: ">h", 0xd2: ">i", 0xd3: ">q"}
        return bytes([o.marker]) + struct.pack(fmt[o.marker], o.v)
    if isinstance(o, int):
        if 0 <= o < 128:
            return bytes([o])
        if -32 <= o < 0:
            return struct.pack(">b", o)
        if o >= 0:
            for m, f, lim in ((0xcc, ">B", 0xFF), (0xcd, ">H", 0xFFFF), (0xce, ">I", 0xFFFFFFFF)):
                if o <= lim:
                    return bytes([m]) + struct.pack(f, o)
            return b"\xcf" + struct.pack(">Q", o)
        for m, f, lim in ((0xd0, ">b", -128), (0xd1, ">h", -32768), (0xd2, ">i", -(2**31))):
            if o >= lim:
                return bytes([m]) + struct.pack(f, o)
        return b"\xd3" + struct.pack(">q", o)
    if isinstance(o, F64):
        return b"\xcb" + struct.pack(">d", o)
    if isinstance(o, float):
        return b"\xca" + struct.pack(">f", o)
    if isinstance(o, str):
        o = o.encode("utf-8", "surrogateescape")
        return pack_strhdr(len(o)) + o
    if isinstance(o, (bytes, bytearray)):  # str with raw (possibly invalid UTF-8) bytes
        return pack_strhdr(len(o)) + bytes(o)
    if isinstance(o, (list, tuple)):
        n = len(o)
        hdr = bytes([0x90 | n]) if n < 16 else (b"\xdc" + struct.pack(">H", n))
        return hdr + b"".join(pack(x) for x in o)
    if isinstance(o, dict):
        n = len(o)
        hdr = bytes([0x80 | n]) if n < 16 else (b"\xde" + struct.pack(">H", n))
        return hdr + b"".join(pack(k) + pack(v) for k, v in o.items())
    raise TypeError(type(o))


def pack_strhdr(n):
    if n < 32:
        return bytes([0xA0 | n])
    if n < 256:
        return bytes([0xD9, n])
    return b"\xda" + struct.pack(">H", n)


# ---- Seeds --------------------------------------------------------------------

ALL_LIMITS = {"max_speed": 3.0, "max_acceleration": F64(6.0), "max_rotation": 4, "max_angular_acceleration": 16.0,
              "radius": 0}
ALL_PARAMS = {"time_to_target": 0.1, "target_radius": 0.5, "slow_radius": 4, "kinematic_time_to_target": 0.25,
              "align_target_radius": 0.02, "align_slow_radius": 0.6, "align_time_to_target": 0.1,
              "max_prediction": 2, "panic_radius": 0, "wander_offset": 4, "wander_radius": 2, "wander_rate": 4,
              "separation_radius": 2, "turn_trigger_distance": 5, "path_recover_strength": F64(1.0)}
A1, A2 = 4194305, 4194306


def command_seeds():
    s = {}
    s["spawn_full"] = [2, 10, {
        "model": "dynamic", "x": F64(-499.5), "y": 499, "orientation": 100.0, "vx": -1, "vy": F64(0.25),
        "limits": ALL_LIMITS,
        "behaviour": {"kind": "interpose", "target_agent": A1, "target_agent2": A2, "orientation": -7,
                      "facing": "target", "combine": "priority", "separation_weight": 1.5,
                      "max_neighbours": 255, "params": ALL_PARAMS},
        "path": {"points": [[0, 0], [F64(1e6), -1e6]], "radius": 0.5, "mode": "loop", "cornering": "lazy",
                 "params": {"slow_radius": 1}}}]
    s["spawn_heading_path"] = [2, 11, {"model": "heading", "x": 0, "y": 0,
                                       "behaviour": {"kind": "wander", "facing": "none", "combine": "blend"},
                                       "path": {"points": [[1, 2]], "radius": 1, "mode": "once",
                                                "cornering": "arc"}}]
    s["spawn_kinematic_min"] = [2, 12, {"y": 1, "x": 2, "model": "kinematic"}]
    s["set_path_256"] = [5, 13, {"agent": A1, "points": [[i % 100, -(i % 50)] for i in range(256)], "radius": 2,
                                 "mode": "pingpong", "cornering": "none", "params": ALL_PARAMS}]
    s["set_path_257_too_many"] = [5, 14, {"agent": A1, "points": [[0, 0]] * 257, "radius": 2, "mode": "once",
                                          "cornering": "none"}]
    s["set_params_all"] = [6, 15, {"agent": A1, "limits": ALL_LIMITS, "params": ALL_PARAMS}]
    s["set_params_agent_only"] = [6, 16, {"agent": Int(7, 0xd2)}]
    s["set_behaviour_point"] = [4, 17, {"agent": 1, "behaviour": {"kind": "align", "target": [F64(3.5), -2],
                                                                  "orientation": F64(3.14159265358979)}}]
    s["set_behaviour_follow_path"] = [4, 18, {"agent": 1, "behaviour": {"kind": "follow_path"}}]
    s["goto_agent_all_keys"] = [4, 40, {"agent": A1, "behaviour": {
        "kind": "goto", "target_agent": A2, "node_radius": F64(0.25), "cornering": "lazy", "replan_distance": 0,
        "facing": "none", "combine": "priority", "separation_weight": 2, "max_neighbours": 4,
        "params": {"slow_radius": 2}}}]
    s["goto_orientation"] = [4, 41, {"agent": A1, "behaviour": {"kind": "goto", "target": [1, 2], "orientation": 1}}]
    s["goto_agent2"] = [4, 42, {"agent": A1, "behaviour": {"kind": "goto", "target_agent": A2, "target_agent2": A1}}]
    s["seek_node_radius"] = [4, 43, {"agent": A1, "behaviour": {"kind": "seek", "target": [1, 2], "node_radius": 1}}]
    s["goto_zero_node_radius"] = [4, 44, {"agent": A1, "behaviour": {"kind": "goto", "target": [1, 2],
                                                                     "node_radius": 0}}]
    s["spawn_goto_path"] = [2, 45, {"model": "heading", "x": 0, "y": 0,
                                    "behaviour": {"kind": "goto", "target": [5, 5], "cornering": "arc"},
                                    "path": {"points": [[1, 2]], "radius": 1, "mode": "once", "cornering": "arc"}}]
    s["hello_utf8_64"] = [1, 19, {"version": 1, "name": "\u00e9" * 32}]
    s["hello_name_65"] = [1, 20, {"version": 1, "name": "x" * 65}]
    s["hello_token"] = [1, 30, {"version": 1, "name": "bot", "token": "v1.eyJyb2xlIjoiYm90In0.c2ln-_~"}]
    s["hello_token_1024_empty_name"] = [1, 31, {"token": "t" * 1024, "name": "", "version": 1}]
    s["hello_token_space"] = [1, 32, {"version": 1, "name": "a", "token": "a b"}]
    s["hello_bad_utf8"] = [1, 21, {"name": b"\xed\xa0\x80ab\xc0\xaf", "version": 1}]
    s["hello_nul"] = [1, 22, {"version": 2, "name": b"a\x00b"}]
    s["ping_int64"] = [9, Int(23, 0xd3), {"client_time_us": Int(2**62, 0xd3)}]
    s["ping_u64_max"] = [9, Int(0xFFFFFFFF, 0xce), {"client_time_us": 2**64 - 1}]
    s["despawn_agent_float"] = [3, 24, {"agent": 5.0}]
    s["stop_agent_negative"] = [7, 25, {"agent": -1}]
    s["query_duplicate_key"] = [8, 26, {"agent": 1, "agent ": 2}]
    s["unknown_key"] = [6, 27, {"agent": 1, "params": {"slow_radus": 1}}]
    s["set_params_settle"] = [6, 30, {"agent": A1, "params": {"avoid_weight": 1, "arrival": "settle"}}]
    s["set_params_bad_arrival"] = [6, 31, {"agent": A1, "params": {"arrival": 1}}]
    s["nan_inf"] = [2, 28, {"model": "dynamic", "x": F32(float("nan")), "y": F64(float("inf"))}]
    s["out_of_range"] = [2, 29, {"model": "dynamic", "x": F64(1000000.01), "y": F64(-0.0)}]
    s["extra_element"] = [9, 5, {}, 1]
    s["unknown_type"] = [99, 5, {}]
    s["type_string"] = ["x", 5, {}]
    s["body_array"] = [9, 5, [1]]
    s["request_id_negative"] = [9, -5, {"client_time_us": 1}]
    s["request_id_u64"] = [9, Int(2**32, 0xcf), {"client_time_us": 1}]
    s["nested_first"] = [Raw(b"\x91" * 40 + b"\x90"), 5, {}]
    s["ext_first"] = [Raw(b"\xc7\x02\x01ab"), 6, {}]
    s["map16_body"] = [Raw(b"\xde\x00\x01" + pack("client_time_us") + pack(1))]
    seeds = {k: pack(v) for k, v in s.items()}
    seeds["map16_body"] = b"\x93\x09\x07" + pack(s["map16_body"][0])
    seeds["array16_ping"] = b"\xdc\x00\x03\x09\x08" + pack({"client_time_us": 1})
    seeds["ping_trailing"] = pack([9, 9, {"client_time_us": 1}]) + b"\x00"
    seeds["cut_after_request_id"] = bytes.fromhex("930905")
    seeds["invalid_byte"] = b"\xc1"
    seeds["empty"] = b""
    seeds["too_many_entries"] = b"\x93\x06\x01\xde\x00\x21" + b"".join(pack("k%d" % i) + b"\x00" for i in range(33))
    return seeds


def snapshot(tick, t, idx, cnt, total, agents):
    flat = []
    for a in agents:
        flat.extend(a)
    return pack([36, tick, t, idx, cnt, total, flat])


def server_seeds():
    s = {}
    for cmd in (3, 4, 5, 6, 7):
        s["ack_%d" % cmd] = pack([33, cmd, cmd, {"agent": A1}])
    s["ack_query_nil_node"] = pack([33, 8, 8, {
        "agent": A1, "tick": 2**40, "model": "heading", "x": -500.0, "y": F64(500), "orientation": F64(-3.14159265),
        "vx": 0, "vy": -1, "rotation": 1.0, "behaviour": "none", "arrived": True, "path_node": None,
        "limits": {"max_speed": 1, "max_acceleration": 1, "max_rotation": 1, "max_angular_acceleration": 1,
                   "radius": 0}, "owner": 0}])
    s["welcome_extra_keys"] = pack([32, 1, {"client_id": 3, "tick_rate": 30, "snapshot_rate": 15,
                                            "world": [-500, F64(-500), 500.0, 500], "tick": 0,
                                            "server_time_us": 2**64 - 1, "protocol": 1,
                                            "future": {"a": [1, None, b"x"], "b": Raw(b"\xc4\x01z")},
                                            "ext": Raw(b"\xd6\x05abcd")}])
    s["error_long_message"] = pack([34, 0, 13, "m" * 255, "f" * 63])
    s["error_message_256"] = pack([34, 0, 13, "m" * 256, None])
    s["error_unknown_code"] = pack([34, 7, 4000000000, "", "behaviour.params.slow_radius"])
    for code in range(6):
        s["event_%d" % code] = pack([35, 2**63 + code, code, A1, code * 1000])
    s["event_bad_code"] = pack([35, 1, 10, A1, 0])
    for code in (7, 8, 9):
        s["event_goto_%d" % code] = pack([35, 1300, code, A1, 2**32 - 1 if code < 9 else 4])
    limits = {"max_speed": 1, "max_acceleration": 1, "max_rotation": 1, "max_angular_acceleration": 1, "radius": 0}
    report = {"agent": A1, "tick": 5, "model": "dynamic", "x": 0, "y": 0, "orientation": 0, "vx": 0, "vy": 0,
              "rotation": 0, "behaviour": "goto", "arrived": False, "path_node": None, "limits": limits, "owner": 0}
    s["ack_query_goto_queued"] = pack([33, 8, 8, dict(report, **{"goto": {"status": "queued", "reason": "map",
                                                                          "target_agent": A2}})])
    s["ack_query_goto_unreachable"] = pack([33, 8, 8, dict(report, **{
        "behaviour": "none", "goto": {"reason": "stuck", "status": "unreachable", "target": [F64(1.5), -2]}})])
    s["ack_query_goto_route_while_queued"] = pack([33, 8, 8, dict(report, **{
        "goto": {"status": "queued", "reason": "new", "target": [1, 1], "route": [[1, 1]]}})])
    s["ack_query_goto_256"] = pack([33, 8, 8, dict(report, **{
        "path_node": 255, "goto": {"status": "following", "reason": "continue", "target_agent": A2,
                                   "goal": [3, 4], "partial": True, "route": [[i, -i] for i in range(256)]}})])
    s["ack_query_goto_both_targets"] = pack([33, 8, 8, dict(report, **{
        "goto": {"status": "queued", "reason": "new", "target": [1, 1], "target_agent": A2}})])
    tuning = {"avoid_weight": 1, "avoid_horizon": F64(3), "avoid_priority": 255, "wall_lookahead": 0,
              "wall_margin": 0.25, "stuck_time": 600, "stuck_reaction": "give_up"}
    s["ack_query_tuning"] = pack([33, 8, 8, dict(report, **{"behaviour": "seek", "tuning": tuning})])
    s["ack_query_tuning_missing_key"] = pack([33, 8, 8, dict(report, **{
        "tuning": {k: v for k, v in tuning.items() if k != "stuck_time"}})])
    s["ack_query_tuning_bad_reaction"] = pack([33, 8, 8, dict(report, **{
        "tuning": dict(tuning, stuck_reaction="panic")})])
    s["ack_query_tuning_settle"] = pack([33, 8, 8, dict(report, **{"tuning": dict(tuning, arrival="settle")})])
    s["ack_query_tuning_bad_arrival"] = pack([33, 8, 8, dict(report, **{"tuning": dict(tuning, arrival="land")})])
    s["ack_query_tuning_zero_horizon"] = pack([33, 8, 8, dict(report, **{"tuning": dict(tuning, avoid_horizon=0)})])
    s["ack_unknown_command"] = pack([33, 1, 1, {"agent": 1}])
    s.update(snapshot_seeds())
    return s


def snapshot_seeds():
    s = {}
    s["snap_empty"] = snapshot(1, 0, 0, 1, 0, [])
    s["snap_extremes"] = snapshot(2**64 - 1, 2**64 - 1, 2, 3, 2**32 - 1, [
        [0xFFFFFFFF, 2**31 - 1, -(2**31), -32768, 2**31 - 1, -(2**31)],
        [1, 10000000, -10000000, 32767, 13107200, -13107201],
        [0, 0, 0, 0, 0, 0]])
    s["snap_signed_forms"] = pack([36, 5, 6, 0, 1, 1, [Int(9, 0xd2), Int(5, 0xd0), Int(-1, 0xd3), Int(3, 0xd1),
                                                        Int(1, 0xcf), Int(2, 0xcc)]])
    s["snap_41_worst"] = snapshot(1235, 41166666, 0, 2, 82,
                                  [[A1 + i, -(2**31) + i, 2**31 - 1 - i, -32768 + i, -70000 - i, 70000 + i]
                                   for i in range(41)])
    s["snap_60_typical"] = snapshot(1236, 41200000, 1, 2, 120,
                                    [[A1 + i, 1250 - 100 * i, -325 + 50 * i, 7823 - 500 * i, 150 - i, 50]
                                     for i in range(60)])
    s["snap_index_ge_count"] = snapshot(1, 0, 1, 1, 0, [])
    s["snap_not_multiple_of_6"] = pack([36, 1, 0, 0, 1, 1, [1, 2, 3, 4, 5]])
    s["snap_more_than_total"] = snapshot(1, 0, 0, 1, 1, [[1, 0, 0, 0, 0, 0], [2, 0, 0, 0, 0, 0]])
    s["snap_theta_out_of_range"] = snapshot(1, 0, 0, 1, 1, [[1, 0, 0, 32768, 0, 0]])
    s["snap_truncated"] = snapshot(1, 0, 0, 1, 2, [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]])[:-3]
    s["snap_trailing"] = snapshot(1, 0, 0, 1, 0, []) + b"\xc0"
    s["snap_wrong_arity"] = pack([36, 1, 0, 0, 1, 0])
    s["snap_array32"] = b"\x97\x24\x01\x00\x00\x01\x01\xdd\x00\x00\x00\x06" + bytes(6)
    s["event_not_snapshot"] = pack([35, 1, 1, A1, 2])
    return s


def read_examples():
    md = open(os.path.join(ROOT, "protocol", "PROTOCOL.md"), encoding="utf-8").read()
    out = {}
    for m in re.finditer(r"<!-- example: ([a-z0-9_]+) -->\s*```\n(.*?)```", md, re.S):
        out[m.group(1)] = bytes.fromhex(m.group(2).replace("\n", " "))
    return out


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    examples = read_examples()
    if not examples:
        sys.exit("gen_corpus: no examples found in PROTOCOL.md")
    for target in ("fuzz_command", "fuzz_server_msg", "fuzz_snapshot"):
        d = os.path.join(CORPUS, target)
        if os.path.isdir(d):
            for f in os.listdir(d):
                if f.startswith(("ex_", "seed_")):
                    os.remove(os.path.join(d, f))
    for name, data in examples.items():
        if name in COMMAND_EXAMPLES:
            write("fuzz_command", "ex_" + name, data)
        else:
            write("fuzz_server_msg", "ex_" + name, data)
        if name == "snapshot":
            write("fuzz_snapshot", "ex_" + name, data)
    for name, data in command_seeds().items():
        write("fuzz_command", "seed_" + name, data)
    for name, data in server_seeds().items():
        write("fuzz_server_msg", "seed_" + name, data)
    for name, data in snapshot_seeds().items():
        write("fuzz_snapshot", "seed_" + name, data)
    print("gen_corpus: %d examples from PROTOCOL.md" % len(examples))


if __name__ == "__main__":
    main()
