#!/usr/bin/env python3
"""Where a JFR recording's sampled allocations come from, by class and allocating call chain, for threads whose name
contains a filter (default "nucx-": the workers' event loops). Usage: bench/jfr-alloc.py REC.jfr [THREAD_FILTER] [TOP]
Needs JDK 25's jfr on PATH or in /usr/lib/jvm/temurin-25-jdk-amd64. Weights are JFR's sampled estimates."""
import collections, os, re, subprocess, sys

rec = sys.argv[1]
flt = sys.argv[2] if len(sys.argv) > 2 else "nucx-"
top = int(sys.argv[3]) if len(sys.argv) > 3 else 25
jfr = "jfr"
for cand in ("/usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr",):
    if os.path.exists(cand):
        jfr = cand
txt = subprocess.run([jfr, "print", "--events", "jdk.ObjectAllocationSample", "--stack-depth", "12", rec],
                     capture_output=True, text=True, check=True).stdout
units = {"bytes": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}
agg = collections.Counter()
for e in txt.split("jdk.ObjectAllocationSample {")[1:]:
    th = re.search(r'eventThread = "([^"]+)"', e)
    if not th or flt not in th.group(1):
        continue
    cls = re.search(r"objectClass = (\S+)", e).group(1)
    w = re.search(r"weight = ([\d.]+) (\w+)", e)
    frames = re.findall(r"\n\s+([\w.$]+\.[\w$<>]+)\(", e)
    chain = " < ".join(".".join(f.split(".")[-2:]) for f in frames[:6])
    agg[cls + " <- " + chain] += float(w.group(1)) * units.get(w.group(2), 1)
total = sum(agg.values()) or 1
for k, v in agg.most_common(top):
    print(f"{100 * v / total:5.1f}% {k}")
