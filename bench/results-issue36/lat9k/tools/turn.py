import sys, subprocess, statistics as st, re, collections
f = sys.argv[1]
out = subprocess.run(["perf", "script", "-i", f, "-F", "tid,time,event,trace", "--ns"], capture_output=True, text=True).stdout
last = {}  # tid -> (kind, t)
turn, sendd, wait, switches = [], [], [], collections.Counter()
for line in out.splitlines():
    m = re.match(r"\s*(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)", line)
    if not m: continue
    tid, t, ev, tr = int(m[1]), float(m[2]) * 1e6, m[3], m[4]
    if ev == "sched:sched_switch":
        switches[tr.split()[0]] += 1; continue
    if "exit_recv" in ev:
        ret = int(tr.split()[-1], 16)
        if ("recvmsg" in ev and ret != 0x2c) : continue
        if ("recvmmsg" in ev and ret < 1): continue
        p = last.get(tid)
        if p and p[0] == "sent": wait.append(t - p[1])
        last[tid] = ("rcvd", t)
    elif "enter_send" in ev:
        p = last.get(tid)
        if p and p[0] == "rcvd": turn.append(t - p[1])
        last[tid] = ("send", t)
    elif "exit_send" in ev:
        p = last.get(tid)
        if p and p[0] == "send": sendd.append(t - p[1])
        last[tid] = ("sent", t)
def q(v):
    v = sorted(v); n = len(v)
    return "n=%d p10 %.2f median %.2f p90 %.2f" % (n, v[n//10], v[n//2], v[9*n//10]) if v else "-"
print(f); print("  turnaround recv->send", q(turn)); print("  send call", q(sendd)); print("  send-exit->recv-exit", q(wait))
