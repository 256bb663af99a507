# Per-round ratio ring-burst32 / chan-batch32 from bench/scripts/ab.sh outputs (one file per binary),
# or from a file whose lines carry an "old: " / "new: " prefix (run3.txt, run4.txt):
#   python3 abratio.py /tmp/ring6-ab2/ring.old.txt /tmp/ring6-ab2/ring.new.txt
#   python3 abratio.py run4.txt
# IMPL=ring-zc32 compares that implementation instead of ring-burst32, PEER=... another peer.
import os, sys, statistics

IMPL = os.environ.get("IMPL", "ring-burst32")
PEER = os.environ.get("PEER", "chan-batch32")

def series(fn):
    out = {}  # label -> list of rounds; a round maps name -> {unit: value}
    for line in open(fn):
        f = line.split()
        label = fn
        if f and f[0].endswith(":"):
            label, f = fn + " " + f[0].rstrip(":"), f[1:]
        if not f or not f[0].startswith("Benchmark"):
            continue
        vals = {}
        for i in range(2, len(f) - 1):
            try:
                vals[f[i + 1]] = float(f[i])
            except ValueError:
                pass
        rounds = out.setdefault(label, [{}])
        if f[0] in rounds[-1]:
            rounds.append({})
        rounds[-1][f[0]] = vals
    return out

for fn in sys.argv[1:]:
    for label, R in series(fn).items():
        print(label, len(R), "rounds")
        for suf in ("producers=1", "producers=2", "producers=1/cap=8192", "producers=2/cap=8192"):
            for unit in ("ns/item", "cpu-ns/item"):
                rs, a_, b_ = [], [], []
                for r in R:
                    a = r.get(f"BenchmarkRing/impl={IMPL}/{suf}-2", {}).get(unit)
                    b = r.get(f"BenchmarkRing/impl={PEER}/{suf}-2", {}).get(unit)
                    if a and b:
                        rs.append(a / b); a_.append(a); b_.append(b)
                if rs:
                    print(f"  {suf:22s} {unit:12s} median {statistics.median(rs):.2f} (min {min(rs):.2f} max {max(rs):.2f})"
                          f"  {IMPL} {statistics.median(a_):.2f} {PEER} {statistics.median(b_):.2f}  [{' '.join(f'{x:.2f}' for x in rs)}]")
