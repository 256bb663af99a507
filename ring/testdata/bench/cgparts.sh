#!/usr/bin/env bash
# cgparts.sh BENCHRE TAG: callgrind of one BenchmarkRing case at 200000x and 2000000x (outputs kept in
# DIR, default /tmp/ring7); prints instructions per item by part (harness = ring_test.*, memmove,
# ring = package ring incl. method-value wrappers, runtime/other = scheduler, channels, GC: not
# deterministic under valgrind). BIN=/tmp/x.test DIR=/tmp/x bash cgparts.sh 'BenchmarkRing$/^impl=ring-zc32$/^producers=1$' zc1
set -euo pipefail; mkdir -p "${DIR:-/tmp/ring7}"
re=$1; tag=$2; bin=${BIN:?build with: CGO_ENABLED=0 go test -c -o X.test ./ring}
for n in 200000 2000000; do
  GODEBUG=asyncpreemptoff=1 GOMAXPROCS=2 valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file=${DIR:-/tmp/ring7}/cg.$tag.$n "$bin" \
    -test.run '^$' -test.bench "$re" -test.benchtime "${n}x" -test.count 1 >${DIR:-/tmp/ring7}/out.$tag.$n 2>&1
  callgrind_annotate --auto=no --threshold=100 ${DIR:-/tmp/ring7}/cg.$tag.$n 2>/dev/null | awk 'NR>0 && $1 ~ /^[0-9,]+$/ {gsub(",","",$1); c=$1; $1=""; print c "\t" $0}' > ${DIR:-/tmp/ring7}/fn.$tag.$n
done
python3 "$(dirname "$0")/cgparts.py" "$tag" ${V:+v}
