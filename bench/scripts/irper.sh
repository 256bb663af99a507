#!/usr/bin/env bash
# irper.sh: instructions per frame, the deterministic figure of BENCHMARKS.md. It runs one benchmark
# of a Go test binary under valgrind's callgrind at two -test.benchtime Nx values and prints
# (Ir(N2) - Ir(N1)) / ((N2 - N1) * FRAMES-PER-OP) for the functions whose callgrind name matches
# FUNC-REGEX (self cost; INCL=1 for inclusive cost):
#
#   go test -c -o /tmp/lag.test ./lag
#   bash bench/scripts/irper.sh /tmp/lag.test 'BenchmarkSelect/mode=xor/policy=layer2$' 64 'lag\.(\(\*Selector\)|xor)' 200 1200
#
# Choose FUNC-REGEX narrowly: a pattern such as 'lag\.' also matches the test's own frame generators,
# whose cost does not scale with N, and the difference is then meaningless (it can come out negative).
# Go binaries run under valgrind with GODEBUG=asyncpreemptoff=1; build bench binaries with
# CGO_ENABLED=0. Needs valgrind (callgrind_annotate) and bc. --fair-sched=yes: without it a Go test
# binary can hang under valgrind (a runtime spin).
set -euo pipefail
bin=$1; re=$2; fpo=$3; pat=$4; n1=${5:-2000}; n2=${6:-12000}
tmp=$(mktemp -d /tmp/irper.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ir() {
  GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$tmp/cg.$1" "$bin" \
    -test.run '^$' -test.bench "$re" -test.benchtime "${1}x" -test.count 1 >/dev/null 2>&1
  callgrind_annotate --auto=no --threshold=100 ${INCL:+--inclusive=yes} "$tmp/cg.$1" 2>/dev/null |
    grep -E "$pat" | awk '{gsub(",","",$1); s+=$1} END {printf "%.0f\n", s}'
}
a=$(ir "$n1"); b=$(ir "$n2")
echo "$re [$pat]: $a $b -> $(echo "scale=1; ($b - $a) / (($n2 - $n1) * $fpo)" | bc) instr/frame"
