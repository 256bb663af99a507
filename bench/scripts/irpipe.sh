#!/usr/bin/env bash
# irpipe.sh: instructions per frame of BenchmarkPipeline's pipeline step (bench.(*pipeline).forward and
# everything it calls: the stage, the LAG choice, the TX queue; neither the receive nor the refill),
# with the route lookup (functions of package fib) counted apart. It runs one sub-benchmark of a
# bench test binary under callgrind, collecting only inside forward, at two -test.benchtime Nx
# values, and prints each function's self cost per frame, (Ir(N2) - Ir(N1)) / ((N2 - N1) * 64),
# then the totals with and without the FIB:
#
#   cd bench && CGO_ENABLED=0 go test -c -o /tmp/pipe.test . &&
#     bash scripts/irpipe.sh /tmp/pipe.test 'BenchmarkPipeline/variant=vlanrouter-table/stage=\+enqueue$'
#
# Run it from the bench directory (sub-benchmarks on the real table locate it with go list). Needs
# valgrind (callgrind_annotate). Inlined code counts in the function it is inlined into.
set -euo pipefail
bin=$1; re=${2:-'BenchmarkPipeline/variant=vlanrouter-table/stage=\+enqueue$'}; n1=${3:-200}; n2=${4:-1200}
tmp=$(mktemp -d /tmp/irpipe.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
run() {
  # Retried: callgrind's signal bookkeeping occasionally asserts on a Go binary, and its shadow call
  # stack can miss forward's return when the goroutine's stack moves (it grows on a fresh goroutine
  # and after the runtime.GC before the timed loop), which leaves collection on outside forward: a
  # run whose profile holds code forward never calls (the refill, the FIB's construction) is thrown
  # away.
  for _ in 1 2 3 4 5 6 7 8; do
    if GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --fair-sched=yes '--toggle-collect=*pipeline*.forward' \
      --callgrind-out-file="$tmp/cg.$1" "$bin" -test.run '^$' -test.bench "$re" -test.benchtime "${1}x" -test.count 1 \
      >"$tmp/log.$1" 2>&1 && grep -q '^Benchmark' "$tmp/log.$1"; then
      callgrind_annotate --auto=no --threshold=100 "$tmp/cg.$1" 2>/dev/null |
        awk '$1 ~ /^[0-9,]+$/ && $0 !~ /PROGRAM TOTALS/ { v=$1; gsub(",","",v); f=$NF=="" ? $(NF-1) : $0;
             sub(/^[ 0-9,]+\([^)]*\) +/, "", f); sub(/ \[.*\]$/, "", f); sub(/^.*:/, "", f); s[f]+=v }
             END { for (f in s) print f "\t" s[f] }' > "$tmp/fn.$1"
      if ! grep -Eq '^github.com/wirespeed/wirespeed/(bench\.(writeFrame|\(\*pipeline\)\.refill)|fib\.\(\*writer\))' "$tmp/fn.$1"; then
        return
      fi
      echo "irpipe: run at ${1}x collected outside forward; again" >&2
    fi
  done
  echo "irpipe: no clean run in 8; last log:" >&2; cat "$tmp/log.$1" >&2; exit 1
}
run "$n1"; run "$n2"
awk -F'\t' -v fr=$(( (n2 - n1) * 64 )) -v re="$re" '
  FNR == NR { a[$1] = $2; next } { b[$1] = $2 }
  END {
    for (f in a) if (!(f in b)) b[f] = 0
    for (f in b) { d = (b[f] - a[f]) / fr; tot += d; if (f ~ /wirespeed\/fib\./) fib += d
                   if (d >= 0.05 || d <= -0.05) printf "%9.1f  %s\n", d, f | "sort -rn" }
    close("sort -rn")
    printf "%s: %.1f instr/frame, of which fib %.1f; without the FIB %.1f\n", re, tot, fib, tot - fib
  }' "$tmp/fn.$n1" "$tmp/fn.$n2"
