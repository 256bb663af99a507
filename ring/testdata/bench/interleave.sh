#!/bin/sh
# Usage (from the ring directory): testdata/bench/interleave.sh OUT.txt 'Ring|BurstLocal'
# Runs the whole benchmark set RUNS times (-count 1 each) instead of -count
# RUNS, so that every run measures ring and channel peers one after another
# under the same load from whatever else shares the machine.
out=$1; shift
: > "$out"
for i in $(seq 1 "${RUNS:-8}"); do
  GOMAXPROCS=2 go test -run '^$' -bench "$@" -count 1 -benchtime "${BT:-1s}" . | grep -E '^Bench' >> "$out"
done
