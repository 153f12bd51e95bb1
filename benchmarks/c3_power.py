"""Can C3's i.i.d. probe decide at its size?  The probe's sampling noise, per seed, against what C3 asks.

C3's locality asks that at least ``min_locality`` of the query rows of a twin's mean layer-2 (and layer-3)
scores have a positive key slope (``behind_rope.maths.metrics.key_slopes``).  Each row's slope carries
sampling noise from the probe's finite sequences; the score file's two halves measure it: for the mean of
two halves, the noise of a row's slope has the spread of (half A's slope - half B's) / 2 over the rows.
Were every row's true slope the same b > 0, a row would come out positive with probability
Phi(b / sigma), so locality >= 0.9 needs b >= 1.28 sigma.  This script prints, per seed and layer:

- the mean key slope of the mean scores and the rows' noise sigma, and their ratio;
- the locality measured, and the locality that ratio predicts for a slope the same in every row;
- the locality predicted at the slope C3's amplification bound asks for (``min_amplification`` times the
  largest simulated layer-2 key slope), and how many probe sequences would give that slope a predicted
  locality of ``min_locality`` (the noise falls as one over the root of the sequences); in layer 2 only,
  where that bound applies.

The noise is pooled over rows (rows near the start average fewer keys and are noisier), and a real slope
need not be the same in every row: the predictions are a yardstick for the probe's size, not a verdict.
Nothing here changes a claim; a larger probe would change a pre-registered measure, a decision to take
before the run that measures it.

    python benchmarks/c3_power.py                 # from results/ of this checkout
    python benchmarks/c3_power.py --run DIR       # DIR: the root of another run (it holds results/)
    python benchmarks/c3_power.py --update-docs   # also rewrite the c3_power table of docs/results.md
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from behind_rope.config import load  # noqa: E402
from behind_rope.maths.metrics import key_slope, key_slope_noise, locality, positive_share  # noqa: E402


def sequences_needed(sequences: int, slope: float, noise: float, share: float) -> float:
    """Probe sequences at which ``slope`` would reach an expected positive share of ``share`` (noise ~ 1/sqrt(n))."""
    z = NormalDist().inv_cdf(share)
    return sequences * (z * noise / slope) ** 2 if slope > 0 else math.inf


def row_noise(scores: dict, layer_index: int) -> tuple[float, float, float]:
    """(mean key slope of the mean scores, the rows' noise spread from the halves, locality) of one layer."""
    mean = scores["mean_scores"][layer_index]
    return key_slope(mean), key_slope_noise(scores["half_a"][layer_index], scores["half_b"][layer_index]), locality(mean)


def power_rows(root: Path) -> tuple[list[dict], dict]:
    """One row per seed, run and layer of C3's probe and its no-mask control, read from ``root``/results."""
    claims = json.loads((root / "results" / "claims.json").read_text())
    c3 = claims["C3"]["measured"]
    config = load(root=root)  # the run's own criteria
    criteria, runs = config["claims"]["C3"]["criteria"], config["claims"]["C3"]
    bound = criteria["min_amplification"] * max(c3["simulation_key_slopes"].values())
    rows = []
    for twin in c3["seeds"]:
        for run in (runs["runs"]["probe"], runs["controls"]["no_mask_probe"]):
            with np.load(root / "results" / "scores" / twin / f"{run}.npz") as data:
                scores = {key: data[key] for key in ("mean_scores", "half_a", "half_b", "layers")}
                sequences = json.loads(str(data["metadata"]))["sequences"]
            for layer in criteria["locality_layers"]:
                index = int(np.flatnonzero(scores["layers"] == layer)[0])
                slope, noise, measured = row_noise(scores, index)
                row = {"twin": twin, "run": run, "layer": layer, "sequences": sequences, "slope": slope,
                       "noise": noise, "locality": measured, "predicted": positive_share(slope, noise)}
                if layer == criteria["amplification_layer"]:  # the bound's slope is a layer-2 slope
                    row |= {"at_bound": positive_share(bound, noise),
                            "needed": sequences_needed(sequences, bound, noise, criteria["min_locality"])}
                rows.append(row)
    return rows, {"bound": bound, "min_locality": criteria["min_locality"]}


def table(rows: list[dict], context: dict, source: str) -> str:
    lines = [f"_Computed by `python benchmarks/c3_power.py --update-docs` from the score files and claims.json of {source}._",
             "", f"The slope C3's amplification bound asks for in layer 2: {context['bound']:.4f} (logit per key "
             f"position); locality must reach {context['min_locality']:g}.", "",
             "| twin | run | layer | sequences | mean key slope | rows' noise | slope / noise | locality | "
             "predicted by slope / noise | predicted at the bound's slope | sequences for the bound's slope to reach "
             f"{context['min_locality']:g} |", "|---" * 11 + "|"]
    for row in rows:
        lines.append(f"| {row['twin']} | {row['run']} | {row['layer']} | {row['sequences']} | {row['slope']:+.4f} | "
                     f"{row['noise']:.4f} | {row['slope'] / row['noise']:+.2f} | {row['locality']:.2f} | "
                     f"{row['predicted']:.2f} | " + (f"{row['at_bound']:.2f} | {row['needed']:,.0f} |" if "needed" in row
                                                        else "| |"))
    probe = [row for row in rows if "needed" in row and row["run"] == rows[0]["run"]]
    if probe:
        shares, needed = [row["at_bound"] for row in probe], sorted(row["needed"] for row in probe)
        lines += ["", f"On the probe ({probe[0]['run']}), a twin whose every row had the bound's slope would show a "
                  f"locality of {min(shares):.2f} to {max(shares):.2f} in layer {probe[0]['layer']} at "
                  f"{probe[0]['sequences']:,} sequences, by its seeds' noise (C3 asks {context['min_locality']:g}); "
                  f"{context['min_locality']:g} would take {needed[0]:,.0f} to {needed[-1]:,.0f} sequences "
                  f"(median {float(np.median(needed)):,.0f})."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=ROOT, help="the root of a finished run (it holds results/)")
    parser.add_argument("--source", default="this checkout's run", help="how the docs table names the run")
    parser.add_argument("--update-docs", action="store_true", help="rewrite the c3_power table of docs/results.md")
    args = parser.parse_args()
    rows, context = power_rows(args.run.resolve())
    text = table(rows, context, args.source)
    print(text)
    if args.update_docs:
        from results_doc import update

        update("c3_power", text)


if __name__ == "__main__":
    main()
