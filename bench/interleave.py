#!/usr/bin/env python3
"""Runs perftest pairs side by side in time: every pair (a nucx tree's or ucx_perftest's server on CPU 0 and client on
CPU 1, as bench/alternate.sh pins them) is started once, and then only one pair runs at a time, in turns of --slice
seconds, the others held by SIGSTOP. This machine switches between a fast and a slow mode within seconds (UCX shm
tag_lat 8 B 0.14 or 0.62 us), so runs one after the other, even back to back, compare different machines; turns a
fraction of a second long compare the same one.

Each client prints a progress row every second of its own (ucx_perftest always, nucx with --progress), stamped here
when it arrives. Latency tests (*_lat) use each row's percentile (-R, the median), which both take over the last 2,048
iterations, so a row describes a moment: a row that spans a stop holds one stopped iteration, which moves no median.
Bandwidth tests use the rows of one turn only (a row whose second began before the pair's last resume is left out),
so --slice must be over 2 s there (default 2.5; 0.25 for latency). Rows of the first --warmup seconds are left out.
Each pair's rows are then paired with the reference pair's (the first one given, or ucx when given) nearest in time,
and the ratio of each couple is what is reported: its median and quartiles, overall and by the reference's half (the
faster and the slower half of the reference's rows: the machine's modes).
With three pairs or more, the others are also compared with the first of them (a build or protocol against another).
Before the pairs start and after they end it prints a cache line's round trip between the two cores (bin/nucx cores):
the modes are where the host places the two vCPUs, sharing a level-3 cache (about 55-150 ns) or not (about 315-360 ns).

Usage: bench/interleave.py [--slice S] [--warmup S] [--measure S] [--rows CSV] TEST SIZE PAIR...
  PAIR: a checkout built with bin/build (nucx) or the word ucx (ucx_perftest), then any settings for both of its
  processes, each after a + (a + not followed by NAME= stays in the value, as in -XX:+Flag): e.g.
  .+NUCX_PROTOS=egr/multi/bcopy (the engine's choice against one protocol forced) or ucx+UCX_RNDV_THRESH=1k.
  NUCX_TLS (default shm) and UCX_TLS (default posix,self) choose the transports; NUCX_ARGS and UCX_ARGS add client
  options (e.g. NUCX_ARGS='-D bcopy', UCX_ARGS='-O 32').
  nucx's am_lat and am_bw are UCP's active messages (ucp_am_send_nbx): ucx_perftest runs ucp_am_lat and ucp_am_bw for
  them (its own am_lat and am_bw are UCT's, below any protocol), with -n 600,000,000: ucx_perftest 1.13.1's ucp_am
  tests stall at start for a time that grows with -n (1 s at 1e8, 3 s at 3e8, about 6 at 6e8, inside the default
  warm-up; at 1e9 nothing in 10 s). That is 36 s of its turns at 8 B and 16.8 M msg/s (200,000,000 ended am_bw 8 B
  after 15 s of warm-up and 40 of turns at 9.3 M): a longer run needs UCX_ARGS='-n N' (its last -n counts).
Example: bench/interleave.py tag_lat 8 ucx . ../base
"""
import argparse
import csv
import os
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--slice", type=float, help="seconds each pair runs per turn (default 0.25 for *_lat, 2.5 else)")
    p.add_argument("--warmup", type=float, default=20.0, help="seconds of turns whose rows are left out (20)")
    p.add_argument("--measure", type=float, default=60.0, help="seconds of turns measured after that (60)")
    p.add_argument("--rows", help="also write every measured row to this CSV (pair, seconds from the start, value):"
                   " when the modes came and went")
    p.add_argument("test")
    p.add_argument("size", type=int)
    p.add_argument("pairs", nargs="+")
    a = p.parse_args()
    a.latency = a.test.endswith("_lat")
    if a.slice is None:
        a.slice = 0.25 if a.latency else 2.5
    if not a.latency and a.slice <= 2.0:
        p.error(f"--slice {a.slice}: a bandwidth test needs turns over 2 s (a row is a second of the client's)")
    if a.slice <= 0 or a.warmup < 0 or a.measure <= 0:
        p.error("--slice and --measure must be > 0, --warmup >= 0")
    return a


class Pair:
    def __init__(self, name, server, client):
        self.name, self.server_cmd, self.client_cmd = name, server, client
        self.rows = []          # (time, the row's 8 numbers or None, the line if not a row)
        self.resumed = []       # times this pair was let run
        self.procs = []

    def start(self):
        # Each process leads its own group, so a signal to the group reaches the JVM behind bin/nucx too.
        self.procs.append(subprocess.Popen(self.server_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                           start_new_session=True))
        time.sleep(1.5)
        client = subprocess.Popen(self.client_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  bufsize=1, start_new_session=True)
        self.procs.append(client)
        threading.Thread(target=self.read, args=(client.stdout,), daemon=True).start()

    def read(self, out):
        for line in out:
            now = time.monotonic()
            fields = line.replace("[thread 0]", "").split()
            if len(fields) != 8 or not all(f.replace(".", "", 1).isdigit() for f in fields):
                self.rows.append((now, None, line.rstrip()))  # not a progress row: kept for the error report
                continue
            self.rows.append((now, [float(f) for f in fields], None))

    def signal(self, sig):
        for p in self.procs:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass

    def alive(self):
        return all(p.poll() is None for p in self.procs)


# nucx's tests that ucx_perftest names otherwise: its am_lat and am_bw measure UCT, nucx's UCP's active messages.
UCP_TEST_OF = {"am_lat": "ucp_am_lat", "am_bw": "ucp_am_bw"}


def pairs_of(a):
    if any(spec.split("+")[0] == "ucx" for spec in a.pairs) and not shutil.which("ucx_perftest"):
        sys.exit("ucx_perftest missing: apt-get install -y ucx-utils")
    nucx_tls = os.environ.get("NUCX_TLS", "shm")
    ucx_tls = os.environ.get("UCX_TLS", "posix,self")
    # Not passed on: nucx stops at an unknown NUCX_ variable, and UCX warns of one.
    nucx_args = shlex.split(os.environ.pop("NUCX_ARGS", ""))
    ucx_args = shlex.split(os.environ.pop("UCX_ARGS", ""))
    huge = "100000000000"  # the pairs run until stopped here
    ucx_test = UCP_TEST_OF.get(a.test, a.test)
    ucx_n = "600000000" if ucx_test.startswith("ucp_am") else huge
    out = []
    for spec in a.pairs:
        port = str(random.randint(20000, 40000))
        # A + starts a setting only before NAME=: a JVM option's + (NUCX_JAVA_OPTS=-XX:+Flag) stays in its value.
        where, *settings = re.split(r"\+(?=[A-Z_][A-Z0-9_]*=)", spec)
        for kv in settings:
            if "=" not in kv:
                sys.exit(f"{spec}: '{kv}' is not a VAR=VALUE setting")
        label = "+".join([where if where == "ucx" else os.path.basename(os.path.abspath(where))] + settings)
        if where == "ucx":
            env = ["env", f"UCX_TLS={ucx_tls}"] + settings
            server = ["taskset", "-c", "0"] + env + ["ucx_perftest", "-p", port]
            client = ["taskset", "-c", "1"] + env + ["stdbuf", "-oL", "ucx_perftest", "127.0.0.1", "-p", port,
                                                     "-t", ucx_test, "-s", str(a.size), "-n", ucx_n, "-w", "100000"]
            out.append(Pair(label, server, client + ucx_args))
        else:
            nucx = os.path.join(where, "bin", "nucx")
            if not os.access(nucx, os.X_OK):
                sys.exit(f"{spec}: no bin/nucx in {where} (a PAIR is a built checkout or 'ucx')")
            env = ["env", f"NUCX_TLS={nucx_tls}"] + settings
            server = ["taskset", "-c", "0"] + env + [nucx, "perftest", "-p", port]
            # Its warm-up is wall time, stopped time included: a share of --warmup, the rest is left out here.
            warm = max(1.0, a.warmup / (2 * len(a.pairs)))
            client = ["taskset", "-c", "1"] + env + [nucx, "perftest", "--progress", "-w", huge, "--warmup-time",
                                                     f"{warm:g}", "-t", a.test, "-s", str(a.size), "-n", huge,
                                                     "127.0.0.1", "-p", port]
            out.append(Pair(label, server, client + nucx_args))
    names = [p.name for p in out]
    for i, p in enumerate(out):
        if names.count(p.name) > 1:
            p.name = f"{p.name}#{i + 1}"
    return out


def value(a, fields):
    # Row columns: iterations, percentile, average, overall (us), MB/s average, overall, msg/s average, overall.
    if a.latency:
        return fields[1]
    return fields[4] if a.size >= 4096 else fields[6]


def quartiles(xs):
    if len(xs) < 4:
        return (min(xs), statistics.median(xs), max(xs))
    q = statistics.quantiles(xs, n=4)
    return (q[0], q[1], q[2])


def cores():
    """A cache line's round trip between the two cores now, in ns, by this checkout's `bin/nucx cores` (the host's
    placement of the vCPUs: under 200 ns they share a level-3 cache), or '?'."""
    nucx = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bin", "nucx")
    try:
        out = subprocess.run([nucx, "cores", "--ns"], capture_output=True, text=True, timeout=60).stdout.strip()
        return out if out.isdigit() else "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def main():
    a = parse()
    pairs = pairs_of(a)
    unit = "us" if a.latency else ("MB/s" if a.size >= 4096 else "msg/s")
    print(f"interleave: {a.test} {a.size} B, turns of {a.slice:g} s, warm-up {a.warmup:g} s, measured "
          f"{a.measure:g} s; NUCX_TLS={os.environ.get('NUCX_TLS', 'shm')} "
          f"UCX_TLS={os.environ.get('UCX_TLS', 'posix,self')}")
    cores_before = cores()
    try:
        for p in pairs:
            p.start()
            time.sleep(0.5)
            p.signal(signal.SIGSTOP)
        start = time.monotonic()
        measure_from = start + a.warmup
        end = measure_from + a.measure
        while time.monotonic() < end:
            for p in pairs:
                p.resumed.append(time.monotonic())
                p.signal(signal.SIGCONT)
                time.sleep(a.slice)
                p.signal(signal.SIGSTOP)
                if not p.alive():
                    p.signal(signal.SIGKILL)
                    lines = [r[2] for r in p.rows if r[2]][-15:]
                    sys.exit(f"{p.name}: a process ended early; its client said:\n" + "\n".join(lines))
        time.sleep(0.3)  # the readers take the last rows
    finally:
        for p in pairs:
            p.signal(signal.SIGKILL)
    print(f"cores: a cache line's round trip {cores_before} ns before, {cores()} ns after (bin/nucx cores; under "
          f"200: the vCPUs share a level-3 cache)")

    series = {}
    for p in pairs:
        kept = []
        previous = None  # the time of this pair's row before, where its second began
        for t, fields, _ in p.rows:
            if fields is None:
                continue
            began, previous = previous, t
            if t < measure_from or t > end:
                continue
            if not a.latency:
                last_resume = max((r for r in p.resumed if r <= t), default=start)
                if began is None or began < last_resume:  # this row's second began before the resume: a stop
                    continue
            kept.append((t, value(a, fields)))
        if len(kept) < 3:
            sys.exit(f"{p.name}: only {len(kept)} rows measured; longer --measure or --slice")
        series[p.name] = kept
        if a.rows:
            with open(a.rows, "a", newline="") as f:  # a pair's name may hold commas (NUCX_PROTOS=a,b): quoted
                csv.writer(f).writerows((p.name, f"{t - start:.3f}", f"{v:.6g}") for t, v in kept)
        q = quartiles([v for _, v in kept])
        print(f"{p.name:>14}: {len(kept):4d} rows, median {q[1]:.4g} {unit} (quartiles {q[0]:.4g}, {q[2]:.4g})")

    ucx = [p.name for p in pairs if p.name.split("+")[0].split("#")[0] == "ucx"]
    ref = ucx[0] if ucx else pairs[0].name
    others = [p.name for p in pairs if p.name != ref]
    compare(a, series, ref, others, len(pairs))
    if len(others) > 1:  # the engine's choice against protocols forced, or builds against each other
        compare(a, series, others[0], others[1:], len(pairs))


def compare(a, series, ref, names, npairs):
    ref_rows = series[ref]
    ref_split = statistics.median(v for _, v in ref_rows)
    faster_low = a.latency  # the faster half: low latency, high bandwidth
    for name in names:
        rows = series[name]
        couples = []
        for t, v in rows:
            rt, rv = min(ref_rows, key=lambda r: abs(r[0] - t))
            if abs(rt - t) <= 1.0 + 2 * a.slice * npairs:
                couples.append((v / rv, rv))
        if not couples:
            print(f"{name:>14} / {ref}: no rows near each other in time")
            continue
        q = quartiles([c for c, _ in couples])
        line = f"{name:>14} / {ref}: ratio median {q[1]:.3f} (quartiles {q[0]:.3f}, {q[2]:.3f}), {len(couples)} couples"
        for label, fast in (("reference's faster half", True), ("slower half", False)):
            half = [c for c, rv in couples if (rv <= ref_split) == (fast == faster_low)]
            if half:
                line += f"; {label} {statistics.median(half):.3f} ({len(half)})"
        print(line)


if __name__ == "__main__":
    main()
