"""Training one twin: seeded, resumable, bf16 autocast on a GPU, float32 on a CPU.

Batches are drawn per step from a generator seeded with (seed, step), so a run that resumes from
a checkpoint sees exactly the batches it would have seen, and ends with identical weights.  How
long a twin trains is a rule fixed in advance (:class:`StopWhen`, ``training.stop_when``): it
stops at the first held-out evaluation where the loss improved by less than a set fraction over a
set number of steps, or at the cap ``steps``.

A CPU step spends about half its time in the matrix products; the rest goes to the elementwise work around
them.  Two levers take some of that back, both the same computation to float tolerance (tests/test_train.py):
the output layer and the loss over its 2,048 words are one function, taken in cache-sized chunks of tokens
(:class:`NextTokenCrossEntropy`), and on a CPU the
decoder body runs compiled by ``torch.compile`` (:func:`compiled_body`), which fuses the normalisations and
activations.  ``benchmarks/training_speed.py`` measures each lever's share against the machine's matrix-product
rate.
"""

from __future__ import annotations

import json
import math
import resource
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from behind_rope import atomic
from behind_rope.atomic import atomic_dir
from behind_rope.device import DTYPES, pick_device
from behind_rope.twins.model import TwinSize, build_twin, load_weights, match_weight_scale, save_twin, weights
from behind_rope.twins.vocabulary import remap, twin_vocabulary, unigram_loss


@dataclass(frozen=True)
class TrainSettings:
    steps: int
    batch_size: int
    learning_rate: float
    warmup_steps: int
    weight_decay: float
    checkpoint_every: int
    eval_sequences: int
    seed: int


@dataclass(frozen=True)
class StopWhen:
    """The training-length rule: every ``every`` steps the loss on the first ``eval_sequences`` held-out
    sequences is measured; training stops when it improved by less than ``min_relative_gain`` (a
    fraction) over the last ``window`` steps."""

    every: int
    window: int
    min_relative_gain: float
    eval_sequences: int


def fast_bf16(device: torch.device) -> bool:
    """Whether bf16 autocast trains faster than float32 on ``device``: on a GPU, not on a CPU.

    At the twins' shapes a CPU gains nothing from bf16: without AMX it trained them 1.8 times slower than
    float32, and with AMX at the same speed (``benchmarks/cpu_invariance.py --speed``, docs/performance.md).
    And the rounding it brings is a change of kernels that a verdict must not hang on."""
    return device.type != "cpu"


def training_dtype(device: torch.device, requested: str = "auto") -> torch.dtype:
    """``training.dtype``: ``auto`` trains in bf16 autocast where that is faster than float32 (:func:`fast_bf16`),
    else in float32."""
    if requested != "auto":
        return DTYPES[requested]
    return torch.bfloat16 if fast_bf16(device) else torch.float32


def precision(device: torch.device, dtype: torch.dtype):
    """The context of a forward pass in ``dtype`` (:func:`training_dtype`): bf16 autocast (the weights and
    AdamW's state stay float32), or nothing for float32."""
    return torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32)


class NextTokenCrossEntropy(torch.autograd.Function):
    """The mean cross-entropy of the output layer's logits ``hidden @ weight.T`` against ``targets``: the output
    layer and the loss as one function, computed a chunk of ``chunk`` tokens at a time.

    Unfused, a step's 2,016 x 2,048 logits (16 MB) are written out by the output layer's product, then passed over
    four times by the loss and its gradient, and read twice more by the output layer's two gradient products: at
    that size every pass goes to memory, and the forward product ran at a third of the machine's matrix rate.  Here
    a chunk's logits are made, turned into its loss and its softmax-minus-one-hot gradient in place, and multiplied
    back into the gradients of ``hidden`` and ``weight`` while they are in the core's cache.  The forward computes
    the gradients; the backward only scales them.  Float32 throughout: under bf16 autocast the hidden states are
    cast up, and their gradient goes back in their dtype."""

    @staticmethod
    def forward(ctx, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, chunk: int) -> torch.Tensor:
        ctx.hidden_dtype = hidden.dtype
        with torch.autocast(hidden.device.type, enabled=False):
            hidden = hidden.float().contiguous()
            grad_hidden, grad_weight = torch.empty_like(hidden), torch.zeros_like(weight)
            total = hidden.new_zeros(())
            rows = torch.arange(chunk, device=hidden.device)
            for start in range(0, len(targets), chunk):
                part, wanted = hidden[start : start + chunk], targets[start : start + chunk]
                logits = part @ weight.T
                picked = rows[: len(wanted)], wanted
                target_logit, largest = logits[picked], logits.amax(1, keepdim=True)
                softmax = logits.sub_(largest).exp_()
                normaliser = softmax.sum(1, keepdim=True)
                total += (largest.squeeze(1) + normaliser.squeeze(1).log() - target_logit).sum()
                softmax.div_(normaliser)[picked] -= 1.0
                torch.mm(softmax, weight, out=grad_hidden[start : start + chunk])
                grad_weight.addmm_(softmax.T, part)
        ctx.save_for_backward(grad_hidden, grad_weight)
        ctx.tokens = len(targets)
        return total / len(targets)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        grad_hidden, grad_weight = ctx.saved_tensors
        scale = grad / ctx.tokens
        return (grad_hidden * scale).to(ctx.hidden_dtype), grad_weight * scale, None, None


# Tokens per chunk of the output layer and loss: 2 MB of float32 logits at the twins' 2,048 words, a core's L2 cache,
# and a divisor of a step's 32 x 63 predicted tokens.  The size matters little: from 126 to 1,008 tokens a step ran
# 2 to 4 % faster than in one chunk of 2,016 (most of the gain is the single pass over each chunk's logits).
LOSS_CHUNK = 252


def next_token_loss(model, body, batch: torch.Tensor) -> torch.Tensor:
    """What ``model(input_ids=batch, labels=batch).loss`` computes, the decoder run by ``body`` (the model's own
    ``model.model`` or :func:`compiled_body`'s), the output layer and the loss by :class:`NextTokenCrossEntropy`."""
    hidden = body(input_ids=batch).last_hidden_state[:, :-1]
    return NextTokenCrossEntropy.apply(hidden.reshape(-1, hidden.shape[-1]), model.lm_head.weight,
                                       batch[:, 1:].reshape(-1), LOSS_CHUNK)


def compiled_body(model, device: torch.device):
    """The decoder body for training steps: on a CPU compiled by ``torch.compile`` (about 1.25 times the steps a
    second, for some 15 s of compiling in the first step); on a GPU the body as it is."""
    if device.type != "cpu":
        return model.model
    import torch._inductor.config as inductor

    inductor.compile_threads = 1  # a job has one core: no pool of compiling processes beside it
    return torch.compile(model.model)


def backward_step(model, body, batch: torch.Tensor, device: torch.device, dtype: torch.dtype, optimizer):
    """One step's loss and gradients, the decoder run by ``body``; returns (loss, the body to use from now on).

    Where the compiled body fails (no C++ compiler, say), the step is taken again with the body uncompiled,
    after one warning: both compute the same."""
    try:
        with precision(device, dtype):
            loss = next_token_loss(model, body, batch)
        loss.backward()
        return loss, body
    except Exception as error:  # noqa: BLE001 - any failure of the compiler; the plain body raises its own
        if body is model.model:
            raise
        warnings.warn(f"torch.compile failed ({type(error).__name__}: {str(error)[:300]}); training uncompiled",
                      stacklevel=2)
        optimizer.zero_grad(set_to_none=True)
        return backward_step(model, model.model, batch, device, dtype, optimizer)


def plateaued(evaluations: list[tuple[int, float]], rule: StopWhen) -> bool:
    """True when the latest held-out loss is less than ``min_relative_gain`` below the one ``window`` steps
    before it (the latest evaluation at or before that step); False while there is none that old."""
    step, loss = evaluations[-1]
    earlier = [value for at, value in evaluations if at <= step - rule.window]
    return bool(earlier) and (earlier[-1] - loss) / earlier[-1] < rule.min_relative_gain


def learning_rate(step: int, settings: TrainSettings) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak."""
    peak = settings.learning_rate
    if step < settings.warmup_steps:
        return peak * (step + 1) / settings.warmup_steps
    progress = (step - settings.warmup_steps) / max(1, settings.steps - settings.warmup_steps)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def batch_indices(step: int, settings: TrainSettings, n_sequences: int) -> np.ndarray:
    return np.random.default_rng([settings.seed, step]).integers(0, n_sequences, settings.batch_size)


def make_optimizer(model, settings: TrainSettings) -> torch.optim.AdamW:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": settings.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # The fused kernel updates every parameter in one pass (about 5 % of a CPU training step saved).
    return torch.optim.AdamW(groups, lr=settings.learning_rate, betas=(0.9, 0.95), fused=True)


@torch.no_grad()
def validation_loss(model, valid: torch.Tensor, batch_size: int, device: torch.device, dtype: torch.dtype) -> float:
    model.eval()
    total, tokens = 0.0, 0
    for start in range(0, len(valid), batch_size):
        batch = valid[start : start + batch_size].to(device)
        with precision(device, dtype):
            loss = model(input_ids=batch, labels=batch).loss
        count = batch.shape[0] * (batch.shape[1] - 1)
        total, tokens = total + loss.item() * count, tokens + count
    model.train()
    return total / tokens


def save_resume_state(folder: Path, model, optimizer, step: int, history: list, fingerprint: str) -> None:
    """Model and AdamW state in safetensors (no pickle), with the step and loss history in JSON."""
    tensors = {f"model.{k}": v for k, v in weights(model).items()}
    state = optimizer.state_dict()
    for index, slots in state["state"].items():
        for name, value in slots.items():
            tensors[f"optimizer.{index}.{name}"] = torch.as_tensor(value).detach().cpu().contiguous()
    with atomic_dir(folder) as tmp:
        save_file(tensors, tmp / "state.safetensors")
        (tmp / "state.json").write_text(json.dumps(
            {"step": step, "history": history, "fingerprint": fingerprint, "param_groups": state["param_groups"]}))


def load_resume_state(folder: Path, model, optimizer, fingerprint: str) -> tuple[int, list]:
    """Restore a checkpoint written by this exact setting; otherwise start from step 0."""
    if not (folder / "state.json").is_file():
        return 0, []
    meta = json.loads((folder / "state.json").read_text())
    if meta["fingerprint"] != fingerprint:
        print(f"Ignoring the checkpoint in {folder}: it was written with other settings or data.")
        return 0, []
    tensors = load_file(folder / "state.safetensors")
    load_weights(model, {k[6:]: v for k, v in tensors.items() if k.startswith("model.")}, f"{folder}/state.safetensors")
    slots: dict[int, dict] = {}
    for key, value in tensors.items():
        if key.startswith("optimizer."):
            _, index, name = key.split(".", 2)
            slots.setdefault(int(index), {})[name] = value
    optimizer.load_state_dict({"state": slots, "param_groups": meta["param_groups"]})
    print(f"Resuming from the checkpoint at step {meta['step']} in {folder}.")
    return meta["step"], meta["history"]


# One piece: the training loop reads top to bottom as one run, as nanoGPT's does (resumption, step, stop rule,
# checkpoint and summary share its state), and its keyword options (device, dtype, compiling, the stop rule, the
# tests' hooks) are each set on their own by the tests and benchmarks that call it.
def train_twin(positional: str, size: TwinSize, settings: TrainSettings, train_ids: np.ndarray, valid_ids: np.ndarray,
               resume_dir: str | Path, device: str = "auto", stop_after: int | None = None, progress: bool = True,
               stop_when: StopWhen | None = None, dtype: str = "auto", code: str = "", compile_body: bool = False,
               scale_like: dict[str, torch.Tensor] | None = None):
    """Train one twin; returns (model, history, summary), or None when interrupted by ``stop_after`` (tests).

    With ``stop_when``, the held-out loss is measured every ``stop_when.every`` steps (a ``valid_loss`` in
    that step's history row) and training ends when it has plateaued.  ``dtype`` (``training.dtype``): the
    matrix products in bf16 under autocast, the weights and AdamW's state in float32, or all in float32.
    ``code`` (a digest of the training code) is part of what a checkpoint must match to be resumed.
    ``compile_body``: run the decoder body compiled (:func:`compiled_body`) in the training steps.
    ``scale_like``: a trained twin's weights, whose tensors' scale the initial weights take
    (:func:`behind_rope.twins.model.match_weight_scale`).
    """
    from tqdm import tqdm

    device, _ = pick_device(device)
    dtype = training_dtype(device, dtype)
    resume_dir = Path(resume_dir)
    model = build_twin(size, positional, settings.seed).to(device).train()
    if scale_like is not None:
        match_weight_scale(model, scale_like)
    body = compiled_body(model, device) if compile_body else model.model
    optimizer = make_optimizer(model, settings)
    rule = asdict(stop_when) if stop_when else None
    fingerprint = json.dumps([positional, asdict(size), asdict(settings), rule, int(train_ids.sum()), train_ids.shape,
                              str(dtype), code, scale_like is not None])
    start, history = load_resume_state(resume_dir, model, optimizer, fingerprint)
    train = torch.from_numpy(train_ids)
    evaluations = [(h["step"], h["valid_loss"]) for h in history if "valid_loss" in h]
    stopped_at = next((h["step"] for h in history if h.get("stopped")), None)
    probe = torch.from_numpy(valid_ids[: stop_when.eval_sequences]) if stop_when else None
    started, trained_tokens = time.perf_counter(), 0
    # A checkpoint written when the rule stopped training has nothing left to train.
    remaining = range(start, settings.steps) if stopped_at is None else range(0)
    bar = tqdm(remaining, initial=start, total=settings.steps, desc=f"train {positional}", unit="step",
               mininterval=2.0, disable=not progress)
    for step in bar:
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, settings)
        batch = train[batch_indices(step, settings, len(train))].to(device)
        loss, body = backward_step(model, body, batch, device, dtype, optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        trained_tokens += batch.numel()
        history.append({"step": step + 1, "train_loss": loss.item(), "learning_rate": optimizer.param_groups[0]["lr"]})
        bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)  # the bar redraws every mininterval, not every step
        if stop_when and (step + 1) % stop_when.every == 0:
            evaluations.append((step + 1, validation_loss(model, probe, settings.batch_size, device, dtype)))
            history[-1]["valid_loss"] = evaluations[-1][1]
            if plateaued(evaluations, stop_when) and step + 1 < settings.steps:  # at the cap it ends anyway
                history[-1]["stopped"] = True
                stopped_at = step + 1
        if (step + 1) % settings.checkpoint_every == 0 or step + 1 == settings.steps or stopped_at:
            save_resume_state(resume_dir, model, optimizer, step + 1, history, fingerprint)
        if stopped_at:
            bar.write(f"held-out loss improved by less than {stop_when.min_relative_gain:.0%} over {stop_when.window} "
                      f"steps: stopping at step {stopped_at} of at most {settings.steps}")
            break
        if stop_after is not None and step + 1 >= stop_after:
            return None
    seconds = time.perf_counter() - started
    valid = torch.from_numpy(valid_ids[: settings.eval_sequences])
    summary = {
        "positional": positional,
        "steps": stopped_at or settings.steps,
        "max_steps": settings.steps,
        "stopped_early": stopped_at is not None,
        "stop_when": rule,
        "seed": settings.seed,
        "resumed_from_step": start,
        "validation_loss": validation_loss(model, valid, settings.batch_size, device, dtype),
        "validation_sequences": len(valid),
        "unigram_loss": unigram_loss(train_ids, valid_ids[: settings.eval_sequences], size.vocab_size),
        "tokens_per_second": trained_tokens / seconds if trained_tokens else None,
        "trained_tokens": trained_tokens,
        "train_seconds": seconds,
        "parameters": sum(p.numel() for p in model.parameters()),
        "device": str(device),
        "dtype": str(dtype).replace("torch.", ""),
        "compiled": body is not model.model,
        # The float kernels the weights came from: runs on CPUs of different capability differ in the last bits.
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    return model.cpu().float(), history, summary


# What a training run records about its own process rather than the twin: they go to its run record (beside its
# log), not to metrics.json, so that a twin trained again, or resumed after a kill, writes the same files.
RUN_FACTS = ("resumed_from_step", "trained_tokens", "tokens_per_second", "train_seconds", "peak_rss_mb")


def train_and_save(settings: dict, train_path, valid_path, output_dir: Path, resume_dir: Path, code: str = "",
                   scale_reference: str | Path | None = None, run_record: str | Path | None = None) -> dict:
    """Train the twin ``settings`` describe (experiments.steps.twin_settings) and write its folder atomically.

    The folder holds the weights (safetensors), its config, ``training.json`` (the settings it was
    trained with), the vocabulary map, ``loss.csv`` (one
    row per step, with the held-out loss where it was measured) and ``metrics.json`` (held-out and unigram
    losses, the steps trained); the run's throughput, time and memory go to ``run_record``.  Whether the twin
    is sane is decided by claim C3.  ``code``, a digest of the training code (the rule passes its ``code`` param), keeps a checkpoint left by other code from being
    resumed: after an edit the step reruns, and resuming its finished checkpoint would train nothing.
    ``scale_reference``: the model.safetensors of the twin named by the settings' ``weight_scale_of``.
    """
    if bool(settings.get("weight_scale_of")) != (scale_reference is not None):
        raise ValueError(f"{settings['twin']} takes the weight scale of {settings.get('weight_scale_of')!r}, but the "
                         f"reference weights given are {scale_reference!r}: pass that twin's model.safetensors.")
    scale_like = load_file(scale_reference) if scale_reference is not None else None
    size, train_settings = TwinSize(**settings["size"]), TrainSettings(**settings["train"])
    train_raw, valid_raw = np.load(train_path), np.load(valid_path)
    vocabulary = twin_vocabulary(train_raw, size.vocab_size)
    model, history, summary = train_twin(settings["positional"], size, train_settings, remap(train_raw, vocabulary),
                                         remap(valid_raw, vocabulary), resume_dir, settings["device"],
                                         stop_when=StopWhen(**settings["stop_when"]), dtype=settings["dtype"],
                                         code=code, compile_body=settings["compile"], scale_like=scale_like)
    summary["weight_scale_of"] = settings.get("weight_scale_of")
    with atomic_dir(output_dir) as tmp:
        save_twin(model, tmp, {"twin": settings["twin"], "size": settings["size"], "settings": settings["train"]})
        np.save(tmp / "vocabulary.npy", vocabulary)
        rows = ["step,train_loss,learning_rate,valid_loss"]
        rows += [f"{h['step']},{h['train_loss']:.6f},{h['learning_rate']:.6g},"
                 + (f"{h['valid_loss']:.6f}" if "valid_loss" in h else "") for h in history]
        (tmp / "loss.csv").write_text("\n".join(rows) + "\n")
        atomic.write_json(tmp / "metrics.json", {key: value for key, value in summary.items() if key not in RUN_FACTS})
    if run_record is not None:
        atomic.write_json(run_record, {key: summary[key] for key in RUN_FACTS})
    return summary
