"""Score capture on tiny random pretrained-LLM architectures, model sources, and LLM inputs."""

import gc
import sys

import numpy as np
import pytest
import torch

from behind_rope.capture.scores import SCORES, ScoreRecorder, StopForward, hides_later_keys, record_scores, repeat_kv
from behind_rope.data.corpus import bos_prefix
from behind_rope.llm.loading import (
    ModelSourceError,
    auto_batch_size,
    check_architecture,
    encode_documents,
    load_model,
    random_sequences,
    text_sequences,
)

COMMON = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=3, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=64, pad_token_id=None, bos_token_id=None,
              eos_token_id=None)


def tiny_model(architecture: str, **overrides):
    """A randomly initialised model of ``architecture``, built from its config class."""
    import transformers

    config_class, model_class, extra = {
        "llama": ("LlamaConfig", "LlamaForCausalLM", {"head_dim": 8}),
        "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
        "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 8}),
        "phi3": ("Phi3Config", "Phi3ForCausalLM", {}),
        "gemma3_text": ("Gemma3TextConfig", "Gemma3ForCausalLM",
                        {"head_dim": 8, "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention",
                                                                             "sliding_attention"]}),
    }[architecture]
    config = getattr(transformers, config_class)(**{**COMMON, **extra, **overrides})
    torch.manual_seed(0)
    return getattr(transformers, model_class)(config).eval()


def eager_reference_scores(model, input_ids):
    """Per layer, ``QK^T * scaling`` recomputed from each attention module's own projections.

    The inputs of every attention module are caught with forward pre-hooks during an eager
    forward pass; queries and keys are then rebuilt step by step (projection, per-head norm if the
    architecture has one, the module's own rotary function), independently of the score capture.
    """
    caught = {}
    layers = model.model.layers

    def catch(index):
        def hook(module, args, kwargs):
            caught[index] = (kwargs.get("hidden_states", args[0] if args else None), kwargs["position_embeddings"])
        return hook

    handles = [layer.self_attn.register_forward_pre_hook(catch(i), with_kwargs=True) for i, layer in enumerate(layers)]
    model.set_attn_implementation("eager")
    with torch.no_grad():
        model(input_ids=input_ids)
    for handle in handles:
        handle.remove()

    scores = []
    for index, layer in enumerate(layers):
        attention, (hidden, (cos, sin)) = layer.self_attn, caught[index]
        rotary = sys.modules[type(attention).__module__].apply_rotary_pos_emb
        batch, seq_len, _ = hidden.shape
        head_dim = attention.head_dim
        if hasattr(attention, "qkv_proj"):  # Phi-3 fuses the three projections
            q_size = model.config.num_attention_heads * head_dim
            kv_size = model.config.num_key_value_heads * head_dim
            qkv = attention.qkv_proj(hidden)
            query, key = qkv[..., :q_size], qkv[..., q_size:q_size + kv_size]
        else:
            query, key = attention.q_proj(hidden), attention.k_proj(hidden)
        query, key = query.view(batch, seq_len, -1, head_dim), key.view(batch, seq_len, -1, head_dim)
        if hasattr(attention, "q_norm"):  # Qwen3 and Gemma3 normalise queries and keys per head
            query, key = attention.q_norm(query), attention.k_norm(key)
        query, key = rotary(query.transpose(1, 2), key.transpose(1, 2), cos, sin)
        with torch.no_grad():
            scores.append(query @ repeat_kv(key, query.shape[1]).transpose(-1, -2) * attention.scaling)
    return scores


ARCHITECTURES = ["llama", "qwen2", "qwen3", "phi3", "gemma3_text"]


@pytest.mark.filterwarnings("ignore:Mean of empty slice")  # the masked upper triangle
@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_captured_scores_equal_an_eager_recomputation(architecture):
    model = tiny_model(architecture)
    input_ids = torch.randint(0, 64, (3, 10), generator=torch.Generator().manual_seed(1))
    reference = eager_reference_scores(model, input_ids)
    recorder = record_scores(model, input_ids.split(2), range(3), keep_raw=True)
    result = recorder.result()
    for layer in range(3):
        captured = torch.cat(recorder.raw[layer])
        shown = ~captured.isnan()
        torch.testing.assert_close(captured[shown], reference[layer].float()[shown], atol=1e-5, rtol=1e-5)
        expected_mean = np.nanmean(captured.double().numpy(), axis=(0, 1))
        np.testing.assert_allclose(result["mean_scores"][layer], expected_mean, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_the_registered_attention_computes_what_eager_attention_computes(architecture):
    model = tiny_model(architecture)
    input_ids = torch.randint(0, 64, (2, 10), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        model.set_attn_implementation("eager")
        eager = model(input_ids=input_ids).logits
        model.set_attn_implementation(SCORES)
        ours = model(input_ids=input_ids).logits
    torch.testing.assert_close(ours, eager, atol=1e-5, rtol=1e-4)


def test_sliding_window_layers_keep_their_window():
    model = tiny_model("gemma3_text")  # layers: sliding (window 4), full, sliding
    input_ids = torch.randint(0, 64, (2, 10), generator=torch.Generator().manual_seed(3))
    scores = record_scores(model, [input_ids], range(3)).result()["mean_scores"]
    query, key = np.indices((10, 10))
    in_window = (query - key >= 0) & (query - key < 4)
    for layer, visible in ((0, in_window), (1, query >= key), (2, in_window)):
        np.testing.assert_array_equal(np.isfinite(scores[layer]), visible, err_msg=f"layer {layer + 1}")


def test_only_a_plain_causal_mask_goes_to_the_kernel_as_causal():
    from behind_rope.capture.scores import is_plain_causal

    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    window = causal & ~torch.ones(6, 6, dtype=torch.bool).tril(-4)
    padded = causal.clone()
    padded[:, 0] = False  # a padded first key
    assert is_plain_causal(causal.expand(3, 1, 6, 6)) and is_plain_causal(causal.repeat(3, 1, 1, 1))
    assert not is_plain_causal(window.expand(3, 1, 6, 6))
    assert not is_plain_causal(torch.stack([causal, padded])[:, None])  # one row padded
    assert not is_plain_causal(causal[2:].expand(1, 1, 4, 6))  # queries that do not start at key 0


def test_without_the_mask_every_entry_is_recorded():
    model = tiny_model("gemma3_text")
    input_ids = torch.randint(0, 64, (2, 10), generator=torch.Generator().manual_seed(3))
    scores = record_scores(model, [input_ids], range(3), causal=False).result()["mean_scores"]
    assert np.isfinite(scores).all()


def test_a_causal_run_that_gets_no_mask_stops_instead_of_attending_to_every_key():
    from types import SimpleNamespace

    from behind_rope.capture.scores import scores_attention, scores_attention_noncausal

    query = key = value = torch.zeros(1, 2, 5, 4)
    with pytest.raises(RuntimeError, match="got no attention mask"):
        scores_attention(SimpleNamespace(layer_idx=0), query, key, value, None)
    output, _ = scores_attention_noncausal(SimpleNamespace(layer_idx=0), query, key, value, None)
    assert output.shape == (1, 5, 2, 4)  # the no-mask control needs none


def test_the_forward_stops_after_the_last_layer_it_needs():
    model = tiny_model("llama")
    reached = []
    for index, layer in enumerate(model.model.layers):
        layer.register_forward_pre_hook(lambda module, args, index=index: reached.append(index))
    record_scores(model, [torch.zeros(1, 6, dtype=torch.long)], [0])
    assert reached == [0]


def test_recorder_halves_alternate_by_sequence():
    recorder = ScoreRecorder([0])
    query = torch.arange(4, dtype=torch.float32).view(4, 1, 1, 1).expand(4, 2, 3, 1)
    key = torch.ones(4, 2, 3, 1)
    try:
        recorder.add(0, query, key, 1.0, None)
    except Exception as stop:
        assert type(stop).__name__ == "StopForward"
    result = recorder.result()
    assert np.allclose(result["half_a"], 1.0) and np.allclose(result["half_b"], 2.0)  # sequences 0, 2 vs 1, 3
    assert np.allclose(result["mean_scores"], 1.5)


def test_a_local_folder_loads_and_an_unknown_architecture_or_missing_source_stops_with_one_sentence(tmp_path):
    from transformers import GPT2Config

    model = tiny_model("qwen3")
    model.save_pretrained(tmp_path / "qwen3")
    loaded = load_model({"local": str(tmp_path / "qwen3")}, "tiny", torch.device("cpu"), torch.float32)
    assert loaded.config.model_type == "qwen3"
    with pytest.raises(ModelSourceError, match="architecture 'gpt2'.*supported: llama"):
        check_architecture(GPT2Config(), "gpt")
    with pytest.raises(ModelSourceError, match="has no config.json"):
        load_model({"local": str(tmp_path / "missing")}, "gone", torch.device("cpu"), torch.float32)


def test_a_hub_model_without_hub_access_stops_with_one_sentence(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelSourceError, match="needs network access") as error:
        load_model({"hub": "behind-rope/not-a-model", "revision": "0" * 40}, "nowhere", torch.device("cpu"),
                   torch.float32)
    assert "\n" not in str(error.value)


class WordTokenizer:
    """Each word is one token id; with ``bos`` set, text starts with id 1 (as Gemma's tokenizer does)."""

    def __init__(self, bos: bool):
        self.bos_token_id = 1 if bos else None

    def __call__(self, text, add_special_tokens=True):
        ids = [10 + len(word) for word in text.split()]
        prefix = [1] if self.bos_token_id is not None and add_special_tokens else []

        class Encoded:
            input_ids = prefix + ids
        return Encoded()


@pytest.mark.parametrize("bos", [True, False])
def test_text_sequences_are_pieces_of_single_documents_with_the_models_own_prefix(bos):
    tokenizer = WordTokenizer(bos)
    documents = {"a": " ".join(["x" * (i % 5 + 1) for i in range(40)]), "b": "yy " * 30}
    encoded, prefix = encode_documents(documents, tokenizer), bos_prefix(tokenizer)
    rows, sampling = text_sequences(encoded, prefix, seq_len=8, count=6, seed=0)
    assert rows.shape == (6, 8) and sampling == "windows"
    assert prefix == ([1] if bos else [])
    assert (rows[:, 0] == 1).all() == bos
    assert np.array_equal(rows, text_sequences(encoded, prefix, seq_len=8, count=6, seed=0)[0])
    with pytest.raises(ValueError, match="fewer than"):
        text_sequences(encoded, prefix, seq_len=8, count=100, seed=0)


@pytest.mark.parametrize("bos", [True, False])
def test_the_authors_sequences_are_the_first_tokens_of_each_document(bos):
    tokenizer = WordTokenizer(bos)
    documents = {f"d{k}": " ".join(["x" * (k % 4 + 1)] * (17 + k)) for k in range(6)}
    documents["short"] = "a b"
    encoded, prefix = encode_documents(documents, tokenizer), bos_prefix(tokenizer)
    rows, sampling = text_sequences(encoded, prefix, seq_len=8, count=4, seed=0, sampling="documents")
    starts = {tuple(tokenizer(text).input_ids[:8]) for text in documents.values()}  # tok.encode(text)[:8]
    assert sampling == "documents" and rows.shape == (4, 8) and {tuple(row) for row in rows} <= starts
    assert len({tuple(row) for row in rows}) == 4  # four different documents
    # auto takes the documents when there are enough long ones (6 here), else windows
    assert text_sequences(encoded, prefix, seq_len=8, count=6, seed=0, sampling="auto")[1] == "documents"
    assert text_sequences(encoded, prefix, seq_len=8, count=7, seed=0, sampling="auto")[1] == "windows"
    with pytest.raises(ValueError, match="only 6 documents of 8 tokens or more"):
        text_sequences(encoded, prefix, seq_len=8, count=7, seed=0, sampling="documents")


def test_random_sequences_draw_iid_from_the_text_tokens_without_bos():
    text = np.array([[1, 5, 6, 7], [1, 8, 9, 5]])
    iid = random_sequences(text, prefix_length=1, seed=0)
    assert iid.shape == text.shape and set(iid.ravel()) <= {5, 6, 7, 8, 9}


def test_batch_size_comes_from_free_memory_within_its_cap():
    model = tiny_model("llama")
    assert 1 <= auto_batch_size(model, 1024, torch.device("cpu"), cap=8) <= 8


def test_the_recorded_sums_do_not_depend_on_the_batch_size_or_on_how_the_mask_is_laid_out():
    model = tiny_model("gemma3_text")
    tokens = torch.randint(0, 64, (7, 12), generator=torch.Generator().manual_seed(1))
    runs = [record_scores(model, tokens.split(size), range(3)).result() for size in (1, 3, 7)]
    for run in runs[1:]:
        assert all(np.array_equal(run[key], runs[0][key], equal_nan=True) for key in runs[0])
    # One mask expanded over the batch (as transformers makes it) or one mask per sequence: the same sums.
    query, key = torch.randn(2, 5, 3, 4, 8).unbind(0)  # batch, heads, positions, head size
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    per_batch, per_row = ScoreRecorder([0, 1]), ScoreRecorder([0, 1])
    per_batch.add(0, query, key, 0.5, causal.expand(5, 1, 4, 4))
    per_row.add(0, query, key, 0.5, causal.expand(5, 1, 4, 4).clone())
    assert torch.equal(per_batch.sums[0], per_row.sums[0]) and torch.equal(per_batch.counts[0], per_row.counts[0])


def causal_masks(queries: int, keys: int) -> dict[str, torch.Tensor]:
    """(batch 3, 1, queries, keys) masks that hide every later key: plain, windowed, padded, and queries that come last."""
    causal = torch.ones(queries, keys, dtype=torch.bool).tril(keys - queries)
    padded = causal.clone()
    padded[:, :2] = False
    return {"causal": causal.expand(3, 1, queries, keys),
            "window": (causal & ~torch.ones(queries, keys, dtype=torch.bool).tril(keys - queries - 7)).expand(3, 1, queries, keys),
            "one row padded": torch.stack([causal, padded, causal])[:, None]}


@pytest.mark.parametrize("per_head", [False, True])
@pytest.mark.parametrize("mask", ["causal", "window", "one row padded"])
@pytest.mark.parametrize("queries", [40, 33])
def test_a_causal_run_computed_in_blocks_of_queries_records_what_the_whole_matrix_gives(mask, per_head, queries):
    query, key = torch.randn(2, 3, 4, 40, 8, generator=torch.Generator().manual_seed(5)).unbind(0)
    query = query[:, :, -queries:]  # fewer queries than keys: the last positions, as with a cache
    allowed = causal_masks(queries, 40)[mask]
    assert hides_later_keys(allowed)
    blocked, whole = ScoreRecorder([0], per_head=per_head, stop=False), ScoreRecorder([0], per_head=per_head, stop=False)
    blocked.block_rows = 1  # 8 blocks of 5 queries
    blocked.add(0, query, key, 0.5, allowed, lower_triangular=True)
    whole.add(0, query, key, 0.5, allowed)
    # The same float32 products, taken in other shapes: equal to float32's rounding.
    torch.testing.assert_close(blocked.sums[0], whole.sums[0], atol=1e-5, rtol=1e-5)
    assert torch.equal(blocked.counts[0], whole.counts[0])
    for name, values in whole.head_sums.get(0, {}).items():
        torch.testing.assert_close(blocked.head_sums[0][name], values, atol=1e-5, rtol=1e-5, equal_nan=True)


@pytest.mark.parametrize("mask", ["causal", "window", "one row padded"])
@pytest.mark.parametrize("queries", [40, 33])
def test_attention_in_blocks_of_queries_gives_what_one_masked_call_gives(mask, queries):
    from behind_rope.capture.scores import attend_in_blocks

    query, key, value = torch.randn(3, 3, 4, 40, 8, generator=torch.Generator().manual_seed(6)).unbind(0)
    query = query[:, :, -queries:]
    allowed = causal_masks(queries, 40)[mask]
    whole = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=allowed, scale=0.3)
    torch.testing.assert_close(attend_in_blocks(query, key, value, allowed, 0.3, rows=6), whole)


def test_blocks_of_queries_are_only_taken_for_a_mask_that_hides_every_later_key():
    query, key = torch.randn(2, 3, 4, 40, 8, generator=torch.Generator().manual_seed(5)).unbind(0)
    everything = torch.ones(3, 1, 40, 40, dtype=torch.bool)  # a mask that shows later keys too
    assert not hides_later_keys(everything)
    blocked, whole = ScoreRecorder([0], stop=False), ScoreRecorder([0], stop=False)
    blocked.block_rows = 1
    blocked.add(0, query, key, 0.5, everything, lower_triangular=True)  # told wrongly: the later keys go missing
    whole.add(0, query, key, 0.5, everything)
    assert not torch.allclose(blocked.sums[0], whole.sums[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("per_head", [False, True])
def test_the_gpu_way_of_capturing_records_what_the_cpu_blocks_record(monkeypatch, per_head):
    # A GPU takes one product over the whole matrix and one masked call per window (skips_hidden_keys is
    # False there); this runs that branch on the CPU, through a model whose sliding windows bind.
    from behind_rope.capture import scores as capture_scores

    model = tiny_model("gemma3_text")  # layers: sliding (window 4), full, sliding
    tokens = torch.randint(0, 64, (3, 24), generator=torch.Generator().manual_seed(2))
    calls = []
    attend = capture_scores.attend_in_blocks
    monkeypatch.setattr(capture_scores, "attend_in_blocks", lambda *args, **kwargs: calls.append(1) or attend(*args, **kwargs))

    def capture():
        return record_scores(model, tokens.split(2), range(3), per_head=per_head).result()

    assert capture_scores.skips_hidden_keys(torch.device("cpu")) and not capture_scores.skips_hidden_keys(torch.device("cuda"))
    blocked = capture()
    assert calls, "the CPU run should attend to its windows in blocks"
    calls.clear()
    monkeypatch.setattr(capture_scores, "skips_hidden_keys", lambda device: False)
    whole = capture()
    assert not calls, "the GPU way attends to a window in one masked call"
    assert blocked.keys() == whole.keys()
    for name in blocked:
        np.testing.assert_allclose(whole[name], blocked[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_variant_changes_the_model_as_it_says_and_its_identity_control_changes_nothing(tmp_path):
    from behind_rope.llm.score_run import score_run

    tiny_model("llama").save_pretrained(tmp_path / "model")
    np.save(tmp_path / "tokens.npy", np.random.default_rng(0).integers(0, 64, (5, 16)))
    base = {"kind": "llm", "source": {"local": str(tmp_path / "model")}, "provenance": {}, "inputs": "text",
            "causal": True, "layers": "all", "batch_size": 2, "device": "cpu", "dtype": "auto", "intervention": None}
    changes = {"tiny": None, "tiny.bos_mean": {"replace_embedding": {"position": 0, "with": "mean"}, "ntk_factor": 1},
               "tiny.identity": {"replace_embedding": {"position": 0, "with": "identity"}, "ntk_factor": 1},
               "tiny.ntk4": {"replace_embedding": None, "ntk_factor": 4}}
    runs = [score_run({**base, "model": name, "intervention": change}, tmp_path / "tokens.npy")
            for name, change in changes.items()]
    assert [metadata["intervention"] for _, metadata in runs] == list(changes.values())
    means = [arrays["mean_scores"] for arrays, _ in runs]
    assert np.array_equal(means[0], means[2], equal_nan=True)  # the identity control changes nothing ...
    assert not np.array_equal(means[0], means[1], equal_nan=True)  # ... the mean embedding does
    assert not np.array_equal(means[0], means[3], equal_nan=True)  # ... and so does NTK scaling


def test_per_head_records_stay_on_the_device_of_the_scores():
    # On a GPU the per-half counts were made on the CPU and the end of a per-head run crashed
    # (benchmarks/gpu_path.py found it); meta tensors stand in for a GPU here.
    recorder = ScoreRecorder([0], per_head=True)
    query, key = torch.zeros(3, 2, 5, 4, device="meta"), torch.zeros(3, 2, 5, 4, device="meta")
    allowed = torch.ones(5, 5, dtype=torch.bool, device="meta").tril()[None, None]
    with pytest.raises(StopForward):  # the last recorded layer ends the forward pass
        recorder.add(0, query, key, 0.5, allowed)
    assert {tensor.device.type for tensor in recorder.head_sums[0].values()} == {"meta"}


@pytest.mark.parametrize("architecture", ["qwen2", "gemma3_text"])
def test_the_score_capture_makes_no_cyclic_garbage(architecture):
    """The command line runs a step with the cyclic collector off (behind_rope.__main__): a capture that
    made reference cycles per batch would pile them up, and with them the activations they hold."""
    model = tiny_model(architecture)
    batches = torch.randint(COMMON["vocab_size"], (8, 12)).split(2)
    record_scores(model, batches, range(2), per_head=True)  # first-call caches
    gc.collect()
    gc.disable()
    try:
        for causal in (True, False):
            record_scores(model, batches, range(2), causal=causal, per_head=True)
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_a_run_that_keeps_its_groups_has_the_same_means_and_each_groups_own_mean_scores():
    model = tiny_model("llama")
    tokens = torch.randint(0, 64, (20, 10), generator=torch.Generator().manual_seed(2))
    plain = record_scores(model, tokens.split(3), range(2)).result()
    grouped = record_scores(model, tokens.split(3), range(2), score_groups=True).result()
    for key in ("mean_scores", "half_a", "half_b"):
        np.testing.assert_allclose(grouped[key], plain[key], rtol=1e-12, atol=1e-12)
    # 20 sequences in 16 groups: sequence k in group k mod 16, so groups 0-3 hold two sequences, the others one.
    assert grouped["score_group_sizes"].tolist() == [2] * 4 + [1] * 12
    entries = grouped["score_group_entries"]
    assert np.isfinite(plain["mean_scores"][0].ravel()[entries]).all() and len(entries) == 10 * 11 // 2
    for group in (0, 5):
        alone = record_scores(model, [tokens[group::16]], range(2)).result()["mean_scores"]
        own = grouped["score_group_deviations"][:, group] + grouped["mean_scores"].reshape(2, -1)[:, entries]
        np.testing.assert_allclose(own, alone.reshape(2, -1)[:, entries], atol=2e-3 * np.nanmax(np.abs(alone)))  # float16 deviations
