#!/usr/bin/env bash
# ab.sh: the side-by-side timing method of BENCHMARKS.md. It builds each package's test binary twice,
# at OLDREV (in a temporary git worktree) and from the working tree, runs the two interleaved for
# ROUNDS rounds (one -test.count 1 run each, the order alternating by round) and leaves the outputs in
# OUT (default /tmp/ab) as <pkg>.old.txt and <pkg>.new.txt, for benchstat:
#
#   bash bench/scripts/ab.sh 3f85273 6 'vlan:^Benchmark(Parse|Push|Pop|Rewrite)$:200ms' 'lag:BenchmarkSelect:1000000x'
#   go run golang.org/x/perf/cmd/benchstat@latest -filter '.unit:cpu-ns/frame' /tmp/ab/vlan.old.txt /tmp/ab/vlan.new.txt
#
# A spec is DIR:BENCH-REGEX[:BENCHTIME] with DIR relative to the repository root (bench/... builds in
# the bench module, without cgo). Run it on an otherwise idle machine.
set -euo pipefail
old=$1; rounds=$2; shift 2
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
out=${OUT:-/tmp/ab}
wt=$(mktemp -d /tmp/ab-old.XXXXXX)
trap 'git -C "$root" worktree remove --force "$wt" >/dev/null 2>&1 || true' EXIT
mkdir -p "$out"
git -C "$root" worktree add -f --detach "$wt" "$old" >/dev/null 2>&1
for spec in "$@"; do
  IFS=: read -r dir re bt <<< "$spec"; name=$(echo "$dir" | tr / _)
  for v in old new; do
    src=$root; [[ $v == old ]] && src=$wt
    if [[ $dir == bench* ]]; then
      (cd "$src/bench" && CGO_ENABLED=0 go test -c -o "$out/$name.$v.test" "./${dir#bench}")
    else
      (cd "$src" && go test -c -o "$out/$name.$v.test" "./$dir")
    fi
    : > "$out/$name.$v.txt"
  done
done
for r in $(seq "$rounds"); do
  for spec in "$@"; do
    IFS=: read -r dir re bt <<< "$spec"; name=$(echo "$dir" | tr / _)
    if (( r % 2 )); then vs="old new"; else vs="new old"; fi
    for v in $vs; do
      wd=$root/$dir; [[ $v == old ]] && wd=$wt/$dir
      (cd "$wd" && "$out/$name.$v.test" -test.run '^$' -test.bench "$re" -test.benchtime "${bt:-100ms}" -test.count 1 >> "$out/$name.$v.txt" 2>&1)
    done
  done
done
