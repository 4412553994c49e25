# Where a tcp ping-pong's one-way time goes, from syscall tracepoints (perf script --ns -F pid,tid,time,event,trace)
# of the two processes of one run: each send and receive system call's own time, and the time between them in user
# space. Usage: perf script ... | python3 bench/tcp-hops.py LABEL PID1,PID2. Prints one line per step: p10/p50/p90 us.
import sys

label, pids = sys.argv[1], set(sys.argv[2].split(","))
steps = {name: [] for name in ("send call", "send return -> peer's poll sees it", "poll -> receive call",
                               "receive call", "receive return -> next send call")}
open_at = {}          # (pid, what) -> time
last_send_return = None


def ret(line):
    return int(line.rsplit("0x", 1)[-1].strip(), 16)


for line in sys.stdin:
    fields = line.split()
    if len(fields) < 3:
        continue
    pid = fields[0].split("/")[0]
    if pid not in pids:
        continue
    t, event = float(fields[1].rstrip(":")), fields[2]
    if "sys_enter_send" in event:
        open_at[(pid, "send")] = t
        if (pid, "received") in open_at:
            steps["receive return -> next send call"].append(t - open_at.pop((pid, "received")))
    elif "sys_exit_send" in event:
        if (pid, "send") in open_at:
            steps["send call"].append(t - open_at.pop((pid, "send")))
        last_send_return = (pid, t)
    elif "sys_exit_epoll_wait" in event:
        if 0 < ret(line) < 1 << 16 and last_send_return and last_send_return[0] != pid:
            steps["send return -> peer's poll sees it"].append(t - last_send_return[1])
            last_send_return = None
            open_at[(pid, "polled")] = t
    elif "sys_enter_recv" in event:
        if (pid, "polled") in open_at:
            steps["poll -> receive call"].append(t - open_at.pop((pid, "polled")))
        open_at[(pid, "receive")] = t
    elif "sys_exit_recv" in event:
        if (pid, "receive") in open_at and 0 < ret(line) < 1 << 31:  # bytes read, not EAGAIN
            steps["receive call"].append(t - open_at.pop((pid, "receive")))
            open_at[(pid, "received")] = t

total = 0.0
for name, d in steps.items():
    d = sorted(x * 1e6 for x in d)
    if not d:
        print(f"{label:6} {name:36} no samples")
        continue
    p50 = d[len(d) // 2]
    total += p50
    print(f"{label:6} {name:36} n {len(d):7}  p10 {d[len(d) // 10]:6.2f}  p50 {p50:6.2f}  p90 {d[9 * len(d) // 10]:6.2f}")
print(f"{label:6} {'sum of the p50s (one way)':36} {total:.2f}")
