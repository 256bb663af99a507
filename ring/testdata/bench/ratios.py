# Per-run ratio ring-burst32 / chan-batch32 from interleaved runs: python3 ratios.py run1.txt run2.txt
import sys, re, statistics
for fn in sys.argv[1:]:
    runs = []  # each run: dict name -> (ns/item, cpu)
    cur = {}
    for line in open(fn):
        f = line.split()
        name = f[0]
        vals = {f[i+1]: float(f[i]) for i in range(2, len(f)-1) if not re.match(r'^[\d.]+$', f[i+1] if i+1 < len(f) else '')}
        if name in cur:
            runs.append(cur); cur = {}
        cur[name] = vals
    runs.append(cur)
    print(fn, len(runs), "runs")
    for p in (1, 2):
        for unit in ("ns/item", "cpu-ns/item"):
            rs = []
            for r in runs:
                a = r.get(f"BenchmarkRing/impl=ring-burst32/producers={p}-2", {}).get(unit)
                b = r.get(f"BenchmarkRing/impl=chan-batch32/producers={p}-2", {}).get(unit)
                if a and b: rs.append(a/b)
            print(f"  producers={p} {unit:12s} per-run ring/chan-batch32: median {statistics.median(rs):.2f}  [{', '.join(f'{x:.2f}' for x in rs)}]")
