# Scheduling of the goroutines of one BenchmarkRing sub-benchmark, from a runtime trace:
#
#   GOMAXPROCS=2 ./ring.test -test.run '^$' -test.bench 'Ring$/impl=ring-burst32/producers=1$' \
#       -test.benchtime 5000000x -test.trace t.trace
#   go tool trace -d=parsed t.trace > t.events
#   python3 sched.py t.events            # lists the goroutines that block most on a channel
#   python3 sched.py t.events 6,26       # those goroutines: running together, blocks, wake -> run
#
# "running together" is the share of the span (first to last event of these goroutines) during
# which all of them were running at once; "wake -> run" is the delay from Waiting->Runnable to
# Runnable->Running and whether the goroutine then ran on the P that woke it.
import sys, re, collections

pat = re.compile(r'^M=(-?\d+) P=(-?\d+) G=(-?\d+) StateTransition Time=(\d+) GoID=(\d+) (\w+)->(\w+) Reason="([^"]*)"')
ev = []
for line in open(sys.argv[1]):
    m = pat.match(line)
    if m:
        _, P, _, T, gid, a, b, why = m.groups()
        ev.append((int(T), int(P), int(gid), a, b, why))
if len(sys.argv) < 3:
    c = collections.Counter(e[2] for e in ev if e[4] == 'Waiting' and e[5].startswith('chan'))
    print("goroutines by channel blocks:", c.most_common(8))
    sys.exit()
gs = [int(x) for x in sys.argv[2].split(',')]
ev = [e for e in ev if e[2] in gs]
t0, t1 = ev[0][0], ev[-1][0]
state = {g: None for g in gs}
run = collections.Counter()
both, last = 0, t0
blocks = collections.Counter()
procs = collections.defaultdict(collections.Counter)
woke_at, woke_on, lat = {}, {}, []
same = other = 0
for T, P, gid, a, b, why in ev:
    if all(state[g] == 'Running' for g in gs):
        both += T - last
    for g in gs:
        if state[g] == 'Running':
            run[g] += T - last
    last = T
    state[gid] = b
    if b == 'Waiting':
        blocks[gid] += 1
    if a == 'Waiting' and b == 'Runnable':
        woke_at[gid], woke_on[gid] = T, P
    if b == 'Running':
        procs[gid][P] += 1
        if gid in woke_at:
            lat.append(T - woke_at.pop(gid))
            if woke_on.pop(gid) == P:
                same += 1
            else:
                other += 1
span = t1 - t0
print(f"span {span/1e6:.2f} ms; all of {gs} running together {both/span*100:.1f} %")
for g in gs:
    print(f"  g{g}: running {run[g]/span*100:.1f} %, blocks {blocks[g]}, runs per P {dict(procs[g])}")
lat.sort()
if lat:
    print(f"wake -> run: {len(lat)} wake-ups, {same} on the waker's P, {other} on another; "
          f"median {lat[len(lat)//2]/1e3:.2f} us, p90 {lat[len(lat)*9//10]/1e3:.2f} us")
