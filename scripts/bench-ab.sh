#!/usr/bin/env bash
# Compare two yee binaries (or one binary under two settings) on `yee bench`, alternately.
#
#   scripts/bench-ab.sh 'A' 'B' PAIRS [yee bench options...]
#
# A and B are commands that stand for `yee`, e.g. './target/release/yee' and
# 'env YEE_CPU_ISA=baseline ./target/release/yee'. Each pair runs A's bench and then B's, with
# `--fused` added unless the options name a mode. Each run prints its median round and its best
# round. The end gives the per-pair ratios A/B of both, as median and range. On a shared machine
# the ratio within a pair means more than any one run's Mcells/s.
set -euo pipefail
if [ $# -lt 3 ]; then
    sed -n '2,10p' "$0" >&2
    exit 2
fi
a=$1 b=$2 pairs=$3
shift 3
mode=--fused
for o in "$@"; do
    case $o in --fused | --two-pass) mode= ;; esac
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# The first mode line of a bench: its median rate and its best round.
rates() {
    # shellcheck disable=SC2086 # A and B are commands with their own words
    $1 bench "${@:2}" $mode 2>&1 | awk '/^(fused|two-pass) /{
        gsub(/[(),;]/, " "); best = 0; rate = 0
        for (i = 1; i <= NF; i++) {
            if ($i == "Mcells/s" && rate == 0) rate = $(i - 1)
            if ($i == "rounds") for (k = i + 1; k <= i + 3; k++) if ($k + 0 > best) best = $k + 0
        }
        print rate, best; exit }'
}
for i in $(seq "$pairs"); do
    ra=$(rates "$a" "$@")
    rb=$(rates "$b" "$@")
    echo "pair $i: A $ra   B $rb (median and best round, Mcells/s)"
    echo "$ra $rb" >>"$out"
done
python3 - "$out" <<'PY'
import statistics as st, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 4]
if not rows:
    sys.exit("no bench output: check the commands")
for name, i in (("median rounds", 0), ("best rounds", 1)):
    r = [x[i] / x[i + 2] for x in rows]
    print(f"A/B of the {name}: median {st.median(r):.3f} ({min(r):.3f}-{max(r):.3f}) over {len(r)} pairs")
print(f"A median {st.median(x[0] for x in rows):.0f} Mcells/s, B {st.median(x[2] for x in rows):.0f}")
PY
