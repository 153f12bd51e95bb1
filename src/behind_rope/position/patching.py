"""Position 0 as a closed system that sink heads read (claim C9), tested by patching its residual state.

Under the causal mask position 0 attends only to itself, so its state at every layer is a function of
its own token: a closed system.  The patch replaces, at the input of one layer, the residual state of
one position by that position's state in another input, and measures how every head's output (the
attention output before the output projection) changes at the queries after the sequence's middle:
``sqrt(sum |o' - o|^2 / sum |o|^2)`` over those queries and all sequences, per head.

Two patches at every layer from ``from_layer`` to the model's last, so that the sink heads are read
wherever they form:

- ``position0``: position 0's state from another input whose first token differs (the next sequence,
  its first token dropped);
- ``middle``: the state of the middle position from the next sequence, the control.

The output change is recorded by group of sequences too (sequence k in group k mod 16, the score recorder's
groups): the spread of its difference between halves over many splits of the groups is the effect's
sampling noise, the claim's floor.  The change of each head's
mean log Z at those queries (the mask's part, as claim C6 measures it) is recorded beside it.  The
unpatched pass also records every head's mean attention to key 0 at every layer, over all sequences
and half A (the even groups), from which the claims step chooses the sink heads.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager

import numpy as np
import torch

from behind_rope.capture.kernels import onednn_linears
from behind_rope.capture.scores import SCORES, ScoreRecorder, StopForward, recording


def decoder_layers(model) -> torch.nn.ModuleList:
    return model.base_model.layers


@contextmanager
def _keeping(modules, captured: dict, read, with_kwargs: bool):
    """A forward pre-hook on each of ``modules`` that keeps ``read(args, kwargs)`` in ``captured[index]``."""
    def keep(index):
        def hook(module, args, kwargs=None):
            captured[index] = read(args, kwargs or {}).detach().clone()
        return hook

    handles = [module.register_forward_pre_hook(keep(i), with_kwargs=with_kwargs) for i, module in enumerate(modules)]
    try:
        yield captured
    finally:
        for handle in handles:
            handle.remove()


def _layer_inputs(model, captured: dict):
    """Keep each decoder layer's input hidden states (batch, S, hidden) in ``captured[layer]``."""
    return _keeping(decoder_layers(model), captured, lambda args, kwargs: args[0] if args else kwargs["hidden_states"],
                    with_kwargs=True)


def _head_outputs(model, captured: dict):
    """Keep each layer's attention output before the output projection, (batch, S, heads x head_dim)."""
    return _keeping([layer.self_attn.o_proj for layer in decoder_layers(model)], captured,
                    lambda args, kwargs: args[0].float(), with_kwargs=False)


@contextmanager
def _stopping_before(module):
    """The pass stops as ``module`` is entered (after the hooks registered before this one have run)."""
    def stop(module, args):
        raise StopForward

    handle = module.register_forward_pre_hook(stop)
    try:
        yield
    finally:
        handle.remove()


@contextmanager
def _from_layer(model, layer: int):
    """The decoder without its layers before ``layer``: a pass fed that layer's input as ``inputs_embeds`` computes
    what a whole pass computes from there on.  The layers keep their own indices (their attention reports them),
    and the per-layer attention types are cut the same way."""
    base, config = model.base_model, model.base_model.config
    layers, types = base.layers, getattr(config, "layer_types", None)
    base.layers = layers[layer:]
    if types is not None:
        config.layer_types = types[layer:]
    try:
        yield
    finally:
        base.layers = layers
        if types is not None:
            config.layer_types = types


@torch.no_grad()
def _forward(model, tokens: torch.Tensor, last_layer: int, start: tuple[int, torch.Tensor] | None = None,
             first_sequence: int = 0, sinks: dict | None = None):
    """One pass up to ``last_layer`` (0-based): the layer inputs, the head outputs and the per-head log Z.

    With ``start`` = (layer, its input hidden states), the pass begins there: the layers before it would
    only recompute the input it is given (a patch changes nothing before the layer it enters).  With
    ``sinks``, each layer's per-head attention to key 0, summed over the rows of each group ((groups, heads, S);
    ``first_sequence``, the run's index of the first row, says which group a row is in), is kept there."""
    inputs, outputs = {}, {}
    # The pass stops once the last layer's head outputs are kept: that layer's output projection and MLP,
    # most of its products, would change nothing recorded.
    recorder = ScoreRecorder(range(last_layer + 1), per_head=True, stop=False)
    recorder.first_sequence = first_sequence
    with ExitStack() as stack:
        stack.enter_context(_layer_inputs(model, inputs))
        stack.enter_context(_head_outputs(model, outputs))
        stack.enter_context(_stopping_before(decoder_layers(model)[last_layer].self_attn.o_proj))
        stack.enter_context(recording(recorder))
        feed = {"input_ids": tokens}
        if start is not None:
            stack.enter_context(_from_layer(model, start[0]))
            feed = {"inputs_embeds": start[1]}
        try:
            model.base_model(**feed, use_cache=False)
        except StopForward:
            pass
    # Per-head log Z summed over the sequences, so batches add up.
    log_z = {layer: sums["log_z"].sum(0) for layer, sums in recorder.head_sums.items()}
    if sinks is not None:
        for layer, sums in recorder.head_sums.items():
            sinks[layer] = sinks[layer] + sums["sink"] if layer in sinks else sums["sink"]
    return inputs, outputs, log_z


def patched(states: torch.Tensor, position: int, state: torch.Tensor) -> torch.Tensor:
    """``states`` (batch, S, hidden) with the residual state at ``position`` replaced by ``state`` (batch, hidden)."""
    states = states.clone()
    states[:, position] = state.to(states.dtype)
    return states


def squares_per_head(values: torch.Tensor, heads: int, queries: slice, groups: torch.Tensor) -> torch.Tensor:
    """Per group and head, (ScoreRecorder.GROUPS, heads): the sum of squares over ``queries`` of (batch, S, heads x
    head_dim) outputs, the rows of each group (``groups``: its index per row) summed apart."""
    batch, seq_len, width = values.shape
    per_row = values[:, queries].reshape(batch, -1, heads, width // heads).double().pow(2).sum(dim=(1, 3))
    return torch.zeros(ScoreRecorder.GROUPS, heads, dtype=torch.float64, device=values.device).index_add_(0, groups, per_row)


def _sink_attention(sums: dict, counts: torch.Tensor, layers: range, from_query: int) -> dict:
    """Per layer (1-based) and head: the mean attention to key 0 over queries >= ``from_query``, over all
    sequences (``all``) and over half A (the even groups, ``half_a``)."""
    def mean(layer, half=None):
        part = slice(None) if half is None else slice(half, None, 2)
        return (sums[layer][part].sum(0) / counts[part].sum())[:, from_query:].mean(-1).cpu().tolist()

    return {"from_query": from_query, "all": {str(layer + 1): mean(layer) for layer in layers},
            "half_a": {str(layer + 1): mean(layer, 0) for layer in layers}}


@torch.no_grad()
def patching_effects(model, tokens: torch.Tensor, from_layer: int, control_position: int, sink_from_query: int,
                     batch_size: int | None = None, progress=None) -> dict:
    """The two patches at the input of every layer from ``from_layer`` (1-based) to the model's last, on ``tokens``
    (sequences, S), in batches of ``batch_size`` sequences; each sequence's donor is the next one (the last takes
    the first), as the pre-registration (config/claims.yaml, C9) says.

    Returns, per patch and layer, every head's output change and log Z change at the queries after
    ``control_position``, and the output change on each half of the sequences (even and odd index); and every
    head's mean attention to key 0 over queries >= ``sink_from_query`` in the unpatched pass.
    """
    model.set_attn_implementation(SCORES)
    device = next(model.parameters()).device
    heads = model.config.get_text_config().num_attention_heads
    count, depth = len(tokens), len(decoder_layers(model))
    layers, last = list(range(from_layer, depth + 1)), depth - 1
    batch_size = min(batch_size or count, count)
    later = slice(control_position + 1, None)
    positions = {"position0": 0, "middle": control_position}
    sums = {(name, layer): {"change": 0.0, "norm": 0.0, "log_z": 0.0} for name in positions for layer in layers}
    base_log_z = {layer: 0.0 for layer in layers}
    sinks, group_counts = {}, torch.zeros(ScoreRecorder.GROUPS, dtype=torch.float64, device=device)
    with onednn_linears(decoder_layers(model)):
        for start in range(0, count, batch_size):
            rows = torch.arange(start, min(start + batch_size, count))
            batch, donor = tokens[rows].to(device), tokens[(rows + 1) % count].to(device)
            groups = (rows % ScoreRecorder.GROUPS).to(device)  # as the score recorder groups them
            group_counts.index_add_(0, groups, torch.ones(len(rows), dtype=torch.float64, device=device))
            base_inputs, base_outputs, base = _forward(model, batch, last, first_sequence=start, sinks=sinks)
            # The donor's first token dropped: another position 0.  Under the mask position 0's state depends on
            # its token alone, so a one-token pass gives it.
            other_first_inputs, _, _ = _forward(model, donor[:, 1:2], last)
            # When every donor is in the batch, the middle state is the next row's, with no pass of its own.
            whole = batch_size == count
            donor_inputs = base_inputs if whole else _forward(model, donor, last)[0]
            donor_rows = (rows + 1) % count if whole else slice(None)
            for layer in layers:
                index = layer - 1
                base_log_z[layer] = base_log_z[layer] + base[index]
                donor_states = {"position0": other_first_inputs[index][:, 0],
                                "middle": donor_inputs[index][donor_rows, control_position]}
                for name, position in positions.items():
                    resume = (index, patched(base_inputs[index], position, donor_states[name]))
                    _, outputs, log_z = _forward(model, batch, index, resume)
                    total = sums[(name, layer)]
                    total["change"] = total["change"] + squares_per_head(outputs[index] - base_outputs[index], heads, later,
                                                                         groups)
                    total["norm"] = total["norm"] + squares_per_head(base_outputs[index], heads, later, groups)
                    total["log_z"] = total["log_z"] + log_z[index]
                base_inputs[index] = base_outputs[index] = None  # done with this layer: memory falls as the pass goes
            if progress is not None:
                progress.update(len(rows))

    def relative(change, norm):
        return (change / norm.clamp(min=1e-30)).sqrt().cpu().tolist()

    used = group_counts > 0

    def halves(total):
        return torch.stack([total[used][half::2].sum(0) for half in (0, 1)])

    effects = {name: {"position": position, "layers": {
        str(layer): {
            "head_output_change": relative(sums[(name, layer)]["change"].sum(0), sums[(name, layer)]["norm"].sum(0)),
            "head_output_change_halves": relative(halves(sums[(name, layer)]["change"]), halves(sums[(name, layer)]["norm"])),
            # per group of sequences, so that the floor can come from many splits: the squared change and norm
            "change_squares_by_group": sums[(name, layer)]["change"][used].cpu().tolist(),
            "norm_squares_by_group": sums[(name, layer)]["norm"][used].cpu().tolist(),
            "log_z_change": ((sums[(name, layer)]["log_z"] - base_log_z[layer]) / count)[:, later].abs().mean(-1).tolist(),
        } for layer in layers}} for name, position in positions.items()}
    return {"patches": effects, "layers": layers, "queries_from": control_position + 1, "sequences": count,
            "seq_len": tokens.shape[1], "heads": heads, "batch_size": batch_size,
            "sink_attention": _sink_attention(sinks, group_counts, range(depth), sink_from_query)}


def held_states_batch(model, seq_len: int, device, sequences: int) -> int:
    """Sequences per batch: as many as one pass allows (``auto_batch_size``), and whose held states, every layer's
    input and head output, fit in a fifth of the free memory.  All of them when they fit: then every donor is in
    the batch and needs no pass of its own."""
    import os

    from behind_rope.llm.loading import auto_batch_size

    if device.type == "cuda":
        free = torch.cuda.mem_get_info(device)[0]
    else:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    config = model.config.get_text_config()
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    width = config.hidden_size + config.num_attention_heads * head_dim
    held = len(decoder_layers(model)) * seq_len * width * 4  # float32 outputs, inputs at most as wide
    return int(max(1, min(auto_batch_size(model, seq_len, device, cap=sequences), free // (5 * held))))


def patching_check(settings: dict, tokens_path) -> dict:
    """Claim C9's runs on one model: the patches (:func:`patching_effects`) and the closed-system gaps of
    position 0 (:func:`closed_system_check`), with one model load."""
    from tqdm import tqdm

    from behind_rope.device import pick_device
    from behind_rope.llm.loading import load_model

    device, dtype = pick_device(settings["device"], settings["dtype"])
    model = load_model(settings["source"], settings["model"], device, dtype)
    tokens = torch.from_numpy(np.load(tokens_path))
    control_position = int(settings["control_position_fraction"] * tokens.shape[1])
    batch_size = settings["batch_size"]
    if batch_size == "auto":
        batch_size = held_states_batch(model, tokens.shape[1], device, len(tokens))
    with tqdm(total=len(tokens), desc=f"{settings['model']} patches ({device.type}, batch {batch_size})", unit="seq",
              mininterval=2.0) as bar:
        effects = patching_effects(model, tokens, settings["from_layer"], control_position, settings["sink_from_query"],
                                   int(batch_size), bar)
    closed = closed_system_check(settings, tokens, model)
    return {"model": settings["model"], "device": device.type, "dtype": str(dtype).removeprefix("torch."),
            **effects, "closed_system": closed}


@torch.no_grad()
def position0_states(model, input_ids: torch.Tensor) -> np.ndarray:
    """The hidden state at position 0 after the embedding and after every layer: (layers + 1, sequences, hidden)."""
    device = next(model.parameters()).device
    states = model.base_model(input_ids=input_ids.to(device), output_hidden_states=True, use_cache=False).hidden_states
    return torch.stack([state[:, 0].float() for state in states]).cpu().numpy()


def closed_system_check(settings: dict, tokens: torch.Tensor, model) -> dict:
    """Position 0 as a closed system: its hidden states across sequences that share their first token, and
    across the same sequences with different first tokens (each row's second token moved to the front),
    on the first ``closed_system_seq_len`` tokens of ``tokens``."""
    from behind_rope.llm.loading import load_tokenizer
    from behind_rope.maths.position_sources import closed_system_gaps

    tokens = tokens[:, : settings["closed_system_seq_len"]]
    different = tokens.clone()
    different[:, 0] = tokens[:, 1]
    gaps = closed_system_gaps(position0_states(model, tokens), position0_states(model, different))
    first = load_tokenizer(settings["source"]).convert_ids_to_tokens(int(tokens[0, 0]))
    return {"first_token": first, "sequences": len(tokens), "seq_len": tokens.shape[1],
            "distinct_first_tokens_in_control": len(set(different[:, 0].tolist())), **gaps}
