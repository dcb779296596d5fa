#!/usr/bin/env python3
"""first_goto.py: how soon a fresh server on a big level answers its first GOTO.

Starts the real server on a Moving AI grid map (no demo, the map's bounds as the
world), then over one steerd-client shell connection spawns an agent at a
problem's start, gives it radius R (SET_PARAMS) and sends GOTO to the problem's
goal with --wait. Prints the wall time from the server's start to "listening",
and from the GOTO to its PLANNED (or UNREACHABLE) event: the mesh of the new
radius class is built off the tick meanwhile, so the time is the build plus the
plan's slices.

    bench/first_goto.py BUILD MAP SCEN [--problem N] [--radius R] [--runs K]

BUILD is a build tree (build-rel for the figures in BENCHMARKS.md); SCEN's line
N (1000) is the problem; K runs (3), each with a server of its own, and the
median of each time.
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def map_size(path):
    w = h = None
    with open(path) as f:
        for line in f:
            if line.startswith("width"):
                w = int(line.split()[1])
            elif line.startswith("height"):
                h = int(line.split()[1])
            elif line.strip() == "map":
                break
    return w, h


def read_line(proc, pattern, deadline):
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if re.search(pattern, line):
            return line
    sys.exit("first_goto: no line matching %r from steerd-client" % pattern)


def one_run(args, start, goal):
    w, h = map_size(args.map)
    port = str(free_udp_port())
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        t0 = time.time()
        srv = subprocess.Popen([os.path.join(args.build, "server/steerd"), "--no-demo", "--map", args.map,
                                "--world", "0,0,%d,%d" % (w, h), "--bind", "127.0.0.1", "--port", port,
                                "--http-port", "0"], stdout=log, stderr=subprocess.STDOUT)
        try:
            while True:
                with open(log.name) as f:
                    if "listening on" in f.read():
                        break
                if srv.poll() is not None or time.time() - t0 > 60:
                    with open(log.name) as f:
                        sys.exit("first_goto: the server did not start:\n" + f.read())
                time.sleep(0.002)
            listening = time.time() - t0
            env = dict(os.environ, STEERD_PORT=port)
            cl = subprocess.Popen([os.path.join(args.build, "client-sample/steerd-client"), "shell"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, env=env)
            deadline = time.time() + 120
            cl.stdin.write("spawn --model kinematic --x %.3f --y %.3f\n" % start)
            cl.stdin.flush()
            agent = re.search(r"\d{5,}", read_line(cl, r"^\d{5,}", deadline)).group(0)
            cl.stdin.write("params %s --set radius=%g\n" % (agent, args.radius))
            cl.stdin.flush()
            read_line(cl, "parameters set", deadline)
            t1 = time.time()
            cl.stdin.write("goto %s --target %.3f,%.3f --wait 60\n" % (agent, goal[0], goal[1]))
            cl.stdin.flush()
            answer = read_line(cl, '"event":"(planned|unreachable)"', deadline)
            answered = time.time() - t1
            cl.stdin.close()
            cl.wait(timeout=30)
        finally:
            srv.terminate()
            srv.wait(timeout=30)
    kind = re.search(r'"event":"(\w+)"', answer).group(1)
    return listening, answered, kind


def main():
    ap = argparse.ArgumentParser(description="time to the first GOTO's answer on a fresh server")
    ap.add_argument("build")
    ap.add_argument("map")
    ap.add_argument("scen")
    ap.add_argument("--problem", type=int, default=1000)
    ap.add_argument("--radius", type=float, default=0.25)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with open(args.scen) as f:
        fields = f.read().split("\n")[args.problem].split("\t")
    # Cell (x, y) covers [x, x + 1] x [y, y + 1]: the problem's points are the cells' centres.
    start = (float(fields[4]) + 0.5, float(fields[5]) + 0.5)
    goal = (float(fields[6]) + 0.5, float(fields[7]) + 0.5)
    runs = [one_run(args, start, goal) for _ in range(args.runs)]
    kinds = sorted(set(r[2] for r in runs))
    print("%s problem %d (optimal %s m), radius %g, %d runs: listening after %.3f s, first GOTO %s after "
          "%.3f s, start to answer %.3f s (medians)" %
          (os.path.basename(args.map), args.problem, fields[8], args.radius, len(runs),
           statistics.median(r[0] for r in runs), "/".join(kinds), statistics.median(r[1] for r in runs),
           statistics.median(r[0] + r[1] for r in runs)))


if __name__ == "__main__":
    main()
