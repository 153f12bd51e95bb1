"""The paper's section on the revised paper (version 2, claims R0-R5): its values, its table of our RP
against the authors' published values, and the table of both versions' claims side by side."""

from __future__ import annotations

from behind_rope.claims.outcome import outcome
from behind_rope.paper.format import listing, number, tex_escape, verdict

# What version 2 does with each of version 1's claims (../shared/PAPER_V2.md, "What changed"): a fact about
# the two texts, not a measurement.  C6-C9 test a follow-up reading, C5d our own question: neither version's.
VERSION_2_STANCE = {
    "C1": ("reattributed", "version 1's layer L2-normalises its inputs; version 2 says the direction toward nearby "
           "keys comes from normalisation, and that without it the stack favours earlier tokens (R1, R2)"),
    "C2": ("reattributed", "as C1: the same normalised layer; our run of it without normalisation is recorded"),
    "C3": ("dropped", "version 2's repository drops the trained NoPE model"),
    "C4": ("dropped", "version 2's repository drops the RoPE simulation"),
    "C5a": ("dropped", "version 2 drops the LLM analysis"),
    "C5b": ("dropped", "version 2 drops the LLM analysis"),
    "C5c": ("dropped", "version 2 drops the LLM analysis"),
    "C5d": ("neither", "our own question"),
}
NEITHER = ("neither", "a follow-up reading's statement, in neither version")


def stance(name: str) -> tuple[str, str]:
    return VERSION_2_STANCE.get(name, NEITHER)


def revision_values(claims: dict) -> dict[str, str]:
    r0, r1 = claims["R0"]["measured"], claims["R1"]["measured"]
    first = sorted({layer for layer in r1["first_layer_below"].values() if layer is not None})
    c2 = claims["C2"]["measured"].get("without_normalisation", {})
    layers = sorted({int(layer) for values in c2.values() for layer in values})
    by_layer = [f"layer~{layer}: " + listing(number(values[str(layer)]) for values in c2.values()) for layer in layers]
    return {
        "r0.agreeing": str(r0["agreeing"]), "r0.published": str(len(r0["published"])),
        "r0.largest_gap": number(max(abs(row["difference"]) for row in r0["published"]), 4),
        "r1.first_layer": listing(first) if first else "no layer",
        "r.outcomes": listing(f"{name} {outcome(claims[name])}" for name in ("R0", "R1", "R2", "R3", "R4", "R5")),
        "r0.closed_form_gap": number(max(entry["largest_gap"] for entry in r0["closed_form_rescaling"].values()
                                         if isinstance(entry, dict)), 4),
        "r0.closed_form_derivation": ("is, symbolically," if r0["closed_form_rescaling"]["derivation_matches_notebook"]
                                      else "is not"),
        "c2.without_normalisation_locality": "; ".join(by_layer) or "n/a",
        "c2.without_normalisation_variants": listing(tex_escape(name) for name in c2) if c2 else "none",
    }


def measured_cells(claims: dict) -> dict[str, str]:
    """The claims table's "Measured" cell of R0-R5."""
    cells = {}
    r0 = claims["R0"]["measured"]
    cells["R0"] = f"{r0['agreeing']} of {len(r0['published'])} published values within the noise (Table~\\ref{{tab:revision_published}})"
    for name in ("R1", "R2", "R3", "R4", "R5"):
        measured = claims[name]["measured"]
        runs, controls = measured["runs"], measured["controls"]
        power = claims[name]["preconditions"]["power"]
        shown = sum(run["shows_effect"] for run in runs.values())
        failing = sum(not control["shows_effect"] for control in controls.values())
        cell = (f"{shown} of {len(runs)} runs show it; {failing} of {len(controls)} no-mask controls fail it; largest "
                f"standard error {number(power['largest_error'], 4)} (power needs $\\leq {number(power['limit'], 4)}$)")
        if name == "R1":
            cell += "; below 0.5 from layer " + listing(
                f"{layer} ({tex_escape(setting)})" for setting, layer in measured["first_layer_below"].items())
        cells[name] = cell
    return cells


def published_table(claims: dict) -> str:
    """Our RP beside each value the authors publish, with the difference and the tolerance of R0."""
    lines = [r"\begin{tabular}{llrrrrl}", r"\toprule",
             r"Setting & Layer & Published & Ours & Difference & Tolerance & Agrees \\", r"\midrule"]
    for row in claims["R0"]["measured"]["published"]:
        agrees = "yes" if row["agrees"] else r"\textbf{no}"
        lines.append(f"\\texttt{{{tex_escape(row['setting'])}}} & {row['layer']} & {row['published']:.4f} & "
                     f"{row['ours']:.4f} & {row['difference']:+.4f} & {row['tolerance']:.4f} & {agrees} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def versions_table(claims: dict) -> str:
    """Each claim of version 1 with what version 2 does with it and our outcome; then version 2's own."""
    lines = [r"{\footnotesize", r"\begin{longtable}{>{\raggedright\arraybackslash}p{0.45in}"
             r">{\raggedright\arraybackslash}p{0.8in}>{\raggedright\arraybackslash}p{3.6in}c}",
             r"\caption{\versionscaption}\label{tab:versions}\\", r"\toprule",
             r"Claim & Version 2 & Why & Ours \\", r"\midrule", r"\endfirsthead",
             r"\toprule", r"Claim & Version 2 & Why & Ours \\", r"\midrule", r"\endhead",
             r"\bottomrule", r"\endlastfoot"]
    for name, claim in claims.items():
        if name.startswith("R"):
            what, why = "new", tex_escape(claim["statement"])
        else:
            what, why = stance(name)
            why = tex_escape(why)
        lines.append(f"{name} & {what} & {why} & {verdict(outcome(claim))} \\\\")
    lines += [r"\end{longtable}", "}"]
    return "\n".join(lines) + "\n"
