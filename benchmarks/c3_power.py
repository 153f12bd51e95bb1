"""Can C3's i.i.d. probe decide at its size?  The probe's sampling noise, per seed, row by row, against what C3 asks.

C3's locality asks that at least ``min_locality`` of the query rows of a twin's mean layer-2 (and layer-3)
scores have a positive key slope (``behind_rope.maths.metrics.key_slopes``), and its amplification reads each
row's slope relative to the row's own score spread (``relative=True``), as does this script.  Each row's slope carries
sampling noise from the probe's finite sequences; the score file's two halves measure it row by row, as C3's
power precondition reads it (``behind_rope.claims.power``: the root mean square of the halves' slope differences
over the ``row_noise_window`` rows centred on a row).  This script prints, per seed, run and layer:

- the mean key slope of the mean scores, the median row's noise and the noisiest row's, and the locality
  measured;
- the locality the rows' noise predicts for a slope the same in every row (the mean of Phi(slope / noise_r));
- in layer 2, where the amplification bound applies: the locality and the power (the probability of passing
  the locality check) of a twin whose every row has the bound's slope, and the probe size that would give it
  the power the precondition asks, were every row's noise to fall as one over the root of the sequences.

A real slope need not be the same in every row: the predictions size the probe, they are not a verdict.

    python benchmarks/c3_power.py                 # from results/ of this checkout
    python benchmarks/c3_power.py --run DIR       # DIR: the root of another run (it holds results/)
    python benchmarks/c3_power.py --update-docs   # also rewrite the c3_power table of docs/results.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from behind_rope.claims.power import locality_power, positive_shares, row_noises, sequences_for_power
from behind_rope.config import load
from behind_rope.maths.metrics import key_slope_half_differences, key_slopes, locality

ROOT = Path(__file__).resolve().parents[1]


def expected_share(slope: float, noises: list[float]) -> float:
    """The locality to expect were every row's slope ``slope``, each row with its own noise."""
    return float(np.mean(positive_shares(slope, noises)))


def row_noise(scores: dict, layer_index: int, window: int) -> tuple[float, list[float], float]:
    """(mean relative key slope of the mean scores, each row's noise from the halves, locality) of one layer."""
    mean = scores["mean_scores"][layer_index]
    differences = key_slope_half_differences(scores["half_a"][layer_index], scores["half_b"][layer_index], relative=True)
    return float(key_slopes(mean, relative=True).mean()), row_noises(differences, window), locality(mean)


def power_rows(root: Path) -> tuple[list[dict], dict]:
    """One row per seed, run and layer of C3's probe and its no-mask control, read from ``root``/results."""
    claims = json.loads((root / "results" / "claims.json").read_text())
    c3 = claims["C3"]["measured"]
    config = load(root=root)  # the run's own criteria
    entry = config["claims"]["C3"]
    criteria, preconditions = entry["criteria"], entry["preconditions"]
    bound = criteria["min_amplification"] * max(c3["simulation_key_slopes"].values())
    rows = []
    for twin in c3["seeds"]:
        for run in (entry["runs"]["probe"], entry["controls"]["no_mask_probe"]):
            with np.load(root / "results" / "scores" / twin / f"{run}.npz") as data:
                scores = {key: data[key] for key in ("mean_scores", "half_a", "half_b", "layers")}
                sequences = json.loads(str(data["metadata"]))["sequences"]
            for layer in criteria["locality_layers"]:
                index = int(np.flatnonzero(scores["layers"] == layer)[0])
                slope, noises, measured = row_noise(scores, index, preconditions["row_noise_window"])
                row = {"twin": twin, "run": run, "layer": layer, "sequences": sequences, "slope": slope,
                       "median_noise": float(np.median(noises)), "largest_noise": max(noises), "locality": measured,
                       "predicted": expected_share(slope, noises)}
                if layer == criteria["amplification_layer"]:  # the bound's slope is a layer-2 slope
                    row |= {"at_bound": expected_share(bound, noises),
                            "power": locality_power(bound, noises, criteria["min_locality"]),
                            "needed": sequences_for_power(sequences, bound, noises, criteria["min_locality"],
                                                          preconditions["min_power"])}
                rows.append(row)
    return rows, {"bound": bound, "min_locality": criteria["min_locality"], "min_power": preconditions["min_power"]}


def table(rows: list[dict], context: dict, source: str) -> str:
    lines = [f"_Computed by `python benchmarks/c3_power.py --update-docs` from the score files and claims.json of {source}._",
             "", f"The slope C3's amplification bound asks for in layer 2: {context['bound']:.4f} (relative to each row's "
             f"score spread: the correlation of a row's scores with key position); locality must reach "
             f"{context['min_locality']:g}, with a power of {context['min_power']:g}.", "",
             "| twin | run | layer | sequences | mean relative key slope | median row's noise | noisiest row's | locality | "
             "predicted by the slope and the rows' noise | predicted at the bound's slope | power at the bound | "
             "sequences for that power |", "|---" * 12 + "|"]
    for row in rows:
        lines.append(f"| {row['twin']} | {row['run']} | {row['layer']} | {row['sequences']:,} | {row['slope']:+.4f} | "
                     f"{row['median_noise']:.5f} | {row['largest_noise']:.4f} | {row['locality']:.2f} | "
                     f"{row['predicted']:.2f} | " + (f"{row['at_bound']:.2f} | {row['power']:.2f} | {row['needed']:,} |"
                                                        if "power" in row else "| | |"))
    probe = [row for row in rows if "power" in row and row["run"] == rows[0]["run"]]
    if probe:
        powers, needed = [row["power"] for row in probe], sorted(row["needed"] for row in probe)
        lines += ["", f"On the probe ({probe[0]['run']}, {probe[0]['sequences']:,} sequences), a twin whose every "
                  f"row had the bound's slope would pass the layer-{probe[0]['layer']} locality check with a "
                  f"probability of {min(powers):.2f} to {max(powers):.2f} by its seeds' noise (the precondition asks "
                  f"{context['min_power']:g}); {needed[0]:,} to {needed[-1]:,} sequences would give it that power."]
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
        from benchmarks.results_doc import RESULTS, update

        update("c3_power", text, RESULTS)


if __name__ == "__main__":
    main()
