#!/usr/bin/env bash
# Time painting a 10,000-polygon GDS layer and a 327,680-triangle STL on 1e8-cell grids: each
# scene's `yee run` (one step) against the same grid with no geometry, alternately, N rounds.
#   python3 benches/paint/make.py && benches/paint/run.sh target/release/yee [N]
set -euo pipefail
yee=$(realpath "$1")
rounds=${2:-3}
cd "$(dirname "$0")"
sed '/\[\[geometry\]\]/,/^span = /d' pillars_gds.toml > bare.toml
out=$(mktemp -d)
trap 'rm -rf "$out" bare.toml' EXIT
secs() { /usr/bin/time -f %e "$yee" run "$1" -o "$out/x.h5" --overwrite --quiet 2>&1 >/dev/null | tail -1; }
for r in $(seq "$rounds"); do
    echo "round $r: bare $(secs bare.toml) s, gds $(secs pillars_gds.toml) s, stl $(secs ball_stl.toml) s"
done
