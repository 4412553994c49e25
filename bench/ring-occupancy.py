#!/usr/bin/env python3
"""Samples the shm rings a running nucx process has mapped: for each ring, the bytes its producer moved per second and
how full it was (tail - head, read every half millisecond from the ring's own counters, RingDescriptor's layout), while
the process runs. A ring that is mostly empty while a stream runs slowly says the producer is the slow side (its copy
into the ring), one that is mostly full the consumer. The files were unlinked when mapped; they are opened read-only
through /proc/PID/map_files (needs root or the same user with CAP_SYS_ADMIN). The two counters are read one after the
other, so a reading can be off by what moved in between (a few KiB below zero or a record above the capacity).

Usage: bench/ring-occupancy.py PID [SECONDS (3)]
"""
import mmap
import os
import statistics
import struct
import sys
import time

HEADER_LENGTH = 128     # RingDescriptor.HEADER_LENGTH: the record area begins here
CAPACITY_OFFSET = 12    # RingDescriptor.CAPACITY_OFFSET (int)
HEAD_OFFSET = 128       # RingDescriptor.HEAD_OFFSET, after the record area; TAIL_OFFSET is 0


def rings(pid):
    for line in open(f"/proc/{pid}/maps"):
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and ".ring" in parts[5]:
            yield parts[0], parts[5].strip()


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[-1])
    pid, seconds = sys.argv[1], float(sys.argv[2]) if len(sys.argv) == 3 else 3.0
    if not seconds >= 0.01:
        sys.exit(f"SECONDS must be at least 0.01, got {sys.argv[2]}")
    maps = []
    try:
        found = list(rings(pid))
    except OSError as e:
        sys.exit(f"process {pid}: {e}")
    seen = set()
    for rng, name in found:
        if name in seen:  # one ring mapped twice (both ends in one process): sampled once
            continue
        seen.add(name)
        try:
            fd = os.open(f"/proc/{pid}/map_files/{rng}", os.O_RDONLY)
        except OSError as e:
            sys.exit(f"process {pid}, ring {name}: {e}")
        try:
            m = mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_SHARED, mmap.PROT_READ)
        finally:
            os.close(fd)
        capacity = struct.unpack_from("<i", m, CAPACITY_OFFSET)[0]
        maps.append((name, m, capacity, HEADER_LENGTH + capacity, HEADER_LENGTH + capacity + HEAD_OFFSET))
    if not maps:
        sys.exit(f"process {pid} has no shm ring mapped")
    full = {name: [] for name, *_ in maps}
    first = {name: struct.unpack_from("<q", m, tail)[0] for name, m, _, tail, _ in maps}
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        for name, m, _, tail, head in maps:
            full[name].append(struct.unpack_from("<q", m, tail)[0] - struct.unpack_from("<q", m, head)[0])
        time.sleep(0.0005)
    elapsed = time.monotonic() - start
    for name, m, capacity, tail, _ in maps:
        moved = struct.unpack_from("<q", m, tail)[0] - first[name]
        q = statistics.quantiles(full[name], n=4)
        print(f"{name}: capacity {capacity >> 10} KiB, {moved / elapsed / 1e9:.2f} GB/s produced, unread KiB "
              f"quartiles {q[0] / 1024:.0f} / {q[1] / 1024:.0f} / {q[2] / 1024:.0f} of {len(full[name])} readings")


if __name__ == "__main__":
    main()
