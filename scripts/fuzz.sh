#!/usr/bin/env bash
# Runs every fuzz target of one package for a while each, with the flags that keep the fuzzer
# searching instead of minimising.
#
#   scripts/fuzz.sh PACKAGE [TIME] [TARGETS]
#
#   PACKAGE  a package directory or import path: dsa, ./vlan, github.com/wirespeed/wirespeed/lag
#   TIME     how long each target fuzzes (go test -fuzztime: 10s, 2m, 50000x); default 10s
#   TARGETS  a regular expression that picks targets by name; default every Fuzz* function
#
# Examples: scripts/fuzz.sh dsa 3s (all 23 dsa targets, 3 s each); scripts/fuzz.sh vlan 1m FuzzEdges
#
# Each target runs as go test -run '^$' -fuzz '^Name$' -fuzztime TIME -fuzzminimizetime 200x.
# -fuzzminimizetime bounds how long the fuzzer minimises each new interesting input: the default,
# 60 s, can hold every worker at 0 execs/s for most of a short run. The targets cut long inputs
# short themselves, so minimisation stays cheap even without the flag; 200 runs per input is
# enough for the small inputs they interpret.
#
# Per target it prints the last progress line (execs, execs/s, new interesting inputs) and
# PASS, FAIL or STALLED (the run ended at 0 execs/s). A crasher is written by go test to
# PACKAGE/testdata/fuzz/Name/ and reproduced by go test -run 'Name/<file>' ./PACKAGE. The script
# exits non-zero if any target failed or stalled. Fuzzing uses every CPU (-parallel defaults to
# GOMAXPROCS); set GOMAXPROCS to use fewer.
set -u
pkg=${1:?usage: scripts/fuzz.sh PACKAGE [TIME] [TARGETS]}
time=${2:-10s}
pick=${3:-.}
case $pkg in
./* | /* | github.com/*) ;;
*) pkg=./$pkg ;;
esac
cd "$(dirname "$0")/.." || exit 2

targets=$(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' | grep -E -- "$pick")
if [ -z "$targets" ]; then
	echo "no fuzz targets in $pkg matching $pick" >&2
	exit 2
fi

status=0
for t in $targets; do
	for try in 1 2; do
		out=$(go test -run '^$' -fuzz "^$t\$" -fuzztime "$time" -fuzzminimizetime 200x "$pkg" 2>&1)
		rc=$?
		# go test's fuzzing coordinator sometimes fails with "context deadline exceeded" when the
		# time runs out while a worker is busy; that says nothing about the target: run it again.
		if [ $rc -ne 0 ] && [ $try -eq 1 ] && grep -q 'context deadline exceeded' <<<"$out" &&
			! grep -q 'Failing input written' <<<"$out"; then
			continue
		fi
		break
	done
	# The last progress line before the final summary (which go test prints right after the
	# last one, at 0/sec); a run shorter than go test's 3 s reporting interval has the summary
	# alone, which says nothing about the rate.
	progress=$(grep '^fuzz: elapsed:' <<<"$out" | grep -v 'gathering baseline')
	rate=
	if [ "$(wc -l <<<"$progress")" -ge 2 ]; then
		last=$(tail -n 2 <<<"$progress" | head -n 1)
		rate=$(sed -n 's/.*(\([0-9]*\)\/sec).*/\1/p' <<<"$last")
	else
		last=$progress
	fi
	if [ $rc -ne 0 ]; then
		verdict=FAIL
		status=1
	elif [ -n "$rate" ] && [ "$rate" -eq 0 ]; then
		verdict=STALLED
		status=1
	else
		verdict=PASS
	fi
	printf '%-8s %-24s %s\n' "$verdict" "$t" "${last#fuzz: }"
	if [ "$verdict" = FAIL ]; then
		grep -v '^fuzz: elapsed:' <<<"$out" | tail -n 20 | sed 's/^/    /'
	fi
done
exit $status
