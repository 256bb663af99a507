#!/usr/bin/env python3
"""irdsa.py: dsa's instructions per frame, every benchmark and tagger, under valgrind's callgrind.

    CGO_ENABLED=0 go test -c -o /tmp/dsa.test ./dsa
    python3 bench/scripts/irdsa.py /tmp/dsa.test /tmp/dsa.ir       # lines "Benchmark tagger instructions"

Each row runs one sub-benchmark at -test.benchtime 640x and 3200x and divides the difference of the
self cost of package code by the extra ops (one op is one frame; for ConduitRecv and ConduitSend one
batch of 64). It leaves out the benchmark harness (Benchmark*, the ring restore, package frame, init)
and the runtime: runtime.memmove varies by a few instructions per frame between runs of one binary.
Compare two binaries (the code before and after a change) row by row.
"""
import os, re, subprocess, sys, tempfile

SKIP = re.compile(r"Benchmark|\.init(\.[0-9]+)?('[0-9]+)?$|\.wrap('[0-9]+)?$|newRing|restore|benchutil|"
                  r"setFrame|frame\.|conduitBatch|mustTagger|benchFrames|naiveRx|\.hx$|runtime")
N1, N2 = 640, 3200
BENCHES = ["DecodeBatch", "EncodeBatch", "Decode", "Encode", "Parse", "ConduitRecv", "ConduitSend"]
TAGGERS = ("none dsa edsa brcm brcm-prepend qca mtk ksz8795 ksz9477 ksz9893 lan937x rtl4a rtl8_4 rtl8_4t "
           "ocelot-8021q vsc73xx-8021q sja1105 ar9331 gswip hellcreek lan9303 trailer").split()


def cost(binary, bench, tagger, n):
    fd, out = tempfile.mkstemp()
    os.close(fd)
    env = dict(os.environ, GODEBUG="asyncpreemptoff=1", GOGC="off", GOMAXPROCS="1")
    subprocess.run(["valgrind", "--tool=callgrind", "--fair-sched=yes", "--callgrind-out-file=" + out, binary,
                    "-test.run", "^$", "-test.bench", f"^Benchmark{bench}$/^tagger={tagger}$",
                    "-test.benchtime", f"{n}x", "-test.count", "1"], env=env, capture_output=True)
    ann = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", out],
                         capture_output=True, text=True).stdout
    os.remove(out)
    total = 0
    for line in ann.splitlines():
        if "wirespeed" not in line:
            continue
        fields = line.split()
        name = [t for t in fields if ":" in t][0].split(":")[-1]
        if not SKIP.search(name):
            total += int(fields[0].replace(",", ""))
    return total


def main():
    binary, out = os.path.abspath(sys.argv[1]), sys.argv[2]
    with open(out, "w") as o:
        for bench in BENCHES:
            for tagger in TAGGERS:
                a, b = cost(binary, bench, tagger, N1), cost(binary, bench, tagger, N2)
                o.write(f"{bench} {tagger} {(b - a) / (N2 - N1):.2f}\n")
                o.flush()


if __name__ == "__main__":
    main()
