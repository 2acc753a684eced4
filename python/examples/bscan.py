"""A B-scan from Python: the gprMax cylinder scene (``scenes/gpr_bscan.toml``) read as a
``yee.Scene``, its trace count set from Python, run in-process and drawn as a radargram.

    python bscan.py [OUT_DIR] [--quick]

``--quick`` runs 6 traces on a twice-coarser grid (the test suite's size); without it, the
scene's 60 traces.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import yee
from yee_post import plot_bscan

SCENE = Path(__file__).resolve().parents[2] / "scenes" / "gpr_bscan.toml"


def main(out_dir: Path, quick: bool):
    out_dir.mkdir(parents=True, exist_ok=True)
    s = yee.Scene.from_toml(SCENE)
    if quick:
        s["scan"]["traces"] = 6
        s["simulation"]["cell_size"] = 0.004
        s["simulation"]["size"] = [0.240, 0.212, 0.004]
        for item in s["source"] + s["monitor"]:
            item["scan_step"] = [0.02, 0.0, 0.0]
    result = s.run(out_dir / "bscan.h5", overwrite=True)
    ax = plot_bscan(result, "rx", "Ez", gain="power", gain_factor=1.0)
    ax.figure.savefig(out_dir / "bscan.png", dpi=120)
    scan = result.bscan("rx", "Ez")
    print(f"{scan.data.shape[0]} traces of {scan.data.shape[1]} samples")
    return scan


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(Path(args[0]) if args else Path("."), "--quick" in sys.argv)
