"""The fast GGUF path (behind_rope.llm.dequantize) against gguf-py and transformers' own path, bit for bit."""

import json
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")

from behind_rope.llm import dequantize as fast  # noqa: E402
from behind_rope.llm.loading import ModelSourceError  # noqa: E402

Q = gguf.GGMLQuantizationType
ROOT = Path(__file__).resolve().parents[1]
# The assembled GGUFs of the pipeline: this checkout's results, else a baseline run's, when present.
MODEL_DIRS = (ROOT / "results" / "models", Path("/work/baseline/results/models"))
MODELS = ("smollm2", "qwen2_5_coder", "gemma3", "qwen2_5_coder_1_5b")
QUANTIZABLE = (Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.BF16)  # the types gguf-py can quantise itself
RAW_ONLY = (Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K)  # K-quants: gguf-py only dequantises them
F16_SCALES = {Q.Q2_K: (80, 82), Q.Q3_K: (108,), Q.Q4_K: (0, 2), Q.Q5_K: (0, 2), Q.Q6_K: (208,)}


def model_file(model: str) -> Path:
    for folder in MODEL_DIRS:
        if (folder / model / "model.gguf").exists():
            return folder / model / "model.gguf"
    pytest.skip(f"no assembled {model} GGUF in {' or '.join(map(str, MODEL_DIRS))} (the pipeline's assemble_gguf makes it)")


def raw_blocks(qtype, rows: int, cols: int, rng) -> np.ndarray:
    """Random blocks of ``qtype`` whose float16 scales are finite, so every value is a number."""
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(rows * cols // block_size, type_size), dtype=np.uint8)
    for offset in F16_SCALES[qtype]:
        scales = rng.normal(0, 0.01, size=len(blocks)).astype(np.float16)
        blocks[:, offset:offset + 2] = scales.view(np.uint8).reshape(-1, 2)
    return blocks.reshape(rows, -1)


def assert_same_floats(ours: np.ndarray, theirs: np.ndarray) -> None:
    assert ours.dtype == theirs.dtype == np.float32 and ours.shape == theirs.shape
    assert ours.tobytes() == theirs.tobytes()


@pytest.fixture
def small_tasks(monkeypatch):
    """Tasks of 768 values (24 small blocks, 3 K-quant blocks), so even a small tensor is split
    across tasks and threads, at boundaries that fall inside rows."""
    monkeypatch.setattr(fast, "ELEMENTS_PER_TASK", 3 * 256)


@pytest.mark.parametrize("qtype", QUANTIZABLE + RAW_ONLY, ids=lambda qtype: qtype.name)
def test_dequantize_equals_gguf_py_on_synthetic_blocks(qtype, small_tasks):
    rng = np.random.default_rng(int(qtype))
    rows, cols = 7, 512  # rows of 2 K-quant blocks, or of 16 small blocks
    if qtype in QUANTIZABLE:
        data = gguf.quantize(rng.normal(0, 1, size=(rows, cols)).astype(np.float32), qtype)
    else:
        data = raw_blocks(qtype, rows, cols, rng)
    assert_same_floats(fast.dequantize(data, qtype, threads=2), gguf.dequantize(data, qtype))


@pytest.mark.parametrize("qtype", [Q.F32, Q.F16], ids=lambda qtype: qtype.name)
def test_dequantize_passes_plain_floats_through(qtype):
    values = np.random.default_rng(0).normal(size=(3, 64)).astype(np.float16 if qtype == Q.F16 else np.float32)
    data = values.view(np.uint8) if qtype == Q.F16 else values
    assert_same_floats(fast.dequantize(data, qtype), gguf.dequantize(data, qtype))


@pytest.mark.parametrize("model", MODELS)
def test_dequantize_equals_gguf_py_on_model_files(model, small_tasks):
    """The smallest tensor of each quantised type in the pipeline's GGUFs."""
    reader = fast.FastGGUFReader(model_file(model))
    smallest = {}
    for tensor in reader.tensors:
        if tensor.tensor_type not in (Q.F32, Q.F16) and tensor.n_bytes < getattr(smallest.get(tensor.tensor_type), "n_bytes", np.inf):
            smallest[tensor.tensor_type] = tensor
    assert smallest
    for tensor in smallest.values():
        assert_same_floats(fast.dequantize(tensor.data, tensor.tensor_type, threads=2),
                           gguf.dequantize(tensor.data, tensor.tensor_type))


def assert_same_fields(ours, theirs) -> None:
    assert list(ours.fields) == list(theirs.fields)
    for key, field in theirs.fields.items():
        mine = ours.fields[key]
        assert (mine.offset, mine.name, mine.data, mine.types) == (field.offset, field.name, field.data, field.types), key
        assert len(mine.parts) == len(field.parts), key
        for a, b in zip(mine.parts, field.parts, strict=True):
            assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes()), key
    assert [(t.name, t.tensor_type, t.data_offset, t.data.shape) for t in ours.tensors] == \
           [(t.name, t.tensor_type, t.data_offset, t.data.shape) for t in theirs.tensors]


def test_fast_reader_gives_gguf_py_fields(tiny_gguf):
    assert_same_fields(fast.FastGGUFReader(tiny_gguf), gguf.GGUFReader(tiny_gguf))


def test_fast_reader_gives_gguf_py_fields_on_a_real_vocabulary():
    path = model_file("smollm2")  # the smallest vocabulary: gguf-py takes ~4 s on it
    assert_same_fields(fast.FastGGUFReader(path), gguf.GGUFReader(path))


# A tiny llama: 2 layers, grouped-query attention (so the q/k permutation is exercised), a mix of
# quantised types, untied output, and a sentencepiece vocabulary that transformers converts.
HIDDEN, HEADS, KV_HEADS, FFN, LAYERS = 64, 4, 2, 256, 2
PIECES = ["▁the", "▁a", "▁cat", "▁sat", "th", "he", "at", "▁", "t", "h", "e", "a", "c", "s"]
TOKENS = ["<unk>", "<s>", "</s>"] + [f"<0x{byte:02X}>" for byte in range(256)] + PIECES


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tiny") / "tiny" / "model.gguf"
    path.parent.mkdir()
    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny llama")
    writer.add_block_count(LAYERS)
    writer.add_context_length(128)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(TOKENS)
    writer.add_token_scores([0.0] * 259 + [-float(i) for i in range(len(PIECES))])
    writer.add_token_types([2, 3, 3] + [6] * 256 + [1] * len(PIECES))
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)

    def add(name, shape, qtype):
        if qtype in RAW_ONLY:
            data = raw_blocks(qtype, *shape, rng)
        else:
            data = gguf.quantize(rng.normal(0, 0.1, size=shape).astype(np.float32), qtype)
        writer.add_tensor(name, data, raw_dtype=qtype)

    add("token_embd.weight", (len(TOKENS), HIDDEN), Q.Q8_0)
    add("output.weight", (len(TOKENS), HIDDEN), Q.Q5_0)
    add("output_norm.weight", (HIDDEN,), Q.F32)
    head_dim = HIDDEN // HEADS
    for layer in range(LAYERS):
        block = f"blk.{layer}."
        add(block + "attn_norm.weight", (HIDDEN,), Q.F32)
        add(block + "ffn_norm.weight", (HIDDEN,), Q.F32)
        add(block + "attn_q.weight", (HIDDEN, HIDDEN), Q.Q4_0)
        add(block + "attn_k.weight", (KV_HEADS * head_dim, HIDDEN), Q.Q4_1)
        add(block + "attn_v.weight", (KV_HEADS * head_dim, HIDDEN), Q.Q5_1)
        add(block + "attn_output.weight", (HIDDEN, HIDDEN), Q.Q8_0)
        add(block + "ffn_gate.weight", (FFN, HIDDEN), Q.Q4_1)
        add(block + "ffn_up.weight", (FFN, HIDDEN), Q.Q5_0)
        add(block + "ffn_down.weight", (HIDDEN, FFN), Q.Q4_K if layer == 0 else Q.Q6_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_fast_cache_equals_transformers_path(tiny_gguf, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # as the workflow runs it; tokenizer_config.json records it
    expected = fast.reference_cache_gguf_model(tiny_gguf, tmp_path / "reference")
    assert fast.cache_gguf_model_fast(tiny_gguf, tmp_path / "fast", threads=2) == expected == \
        {"architecture": "llama", "layers": LAYERS}

    reference, ours = tmp_path / "reference", tmp_path / "fast"
    assert sorted(p.name for p in ours.iterdir()) == sorted(p.name for p in reference.iterdir())
    assert json.loads((ours / "config.json").read_text()) == json.loads((reference / "config.json").read_text())
    theirs, mine = (safetensors_torch.load_file(folder / "model.safetensors") for folder in (reference, ours))
    assert sorted(mine) == sorted(theirs) and "lm_head.weight" in mine
    for name, tensor in theirs.items():
        assert mine[name].dtype == tensor.dtype and mine[name].shape == tensor.shape, name
        assert mine[name].numpy().tobytes() == tensor.numpy().tobytes(), name
    for file in reference.iterdir():  # the tokenizer files, and the weights file itself, byte for byte
        assert (ours / file.name).read_bytes() == file.read_bytes(), file.name


def test_first_layers_only_are_the_full_models_first_layers(tiny_gguf, tmp_path, monkeypatch):
    """pretrained.<model>.layers: the first decoder layers, bit for bit, and the model they make computes what
    the full model computes in them; no tensor of a later layer is unpacked."""
    import torch
    from transformers import AutoModelForCausalLM

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    full, cut = tmp_path / "full", tmp_path / "cut"
    assert fast.cache_gguf_model(tiny_gguf, full) == {"architecture": "llama", "layers": LAYERS}
    unpacked = []
    real = fast.dequantize_async
    monkeypatch.setattr(fast, "dequantize_async", lambda data, qtype, pool: unpacked.append(data.shape) or real(data, qtype, pool))
    assert fast.cache_gguf_model(tiny_gguf, cut, layers=1) == {"architecture": "llama", "layers": 1, "layers_in_file": LAYERS}
    assert len(unpacked) == 3 + 9  # the embedding, the final norm and the LM head, and layer 0's nine tensors
    config = json.loads((cut / "config.json").read_text())
    assert config["num_hidden_layers"] == 1 and config["dequantised_layers"] == {"first": 1, "of": LAYERS}
    theirs, mine = (safetensors_torch.load_file(folder / "model.safetensors") for folder in (full, cut))
    assert set(mine) == {name for name in theirs if not name.startswith(tuple(f"model.layers.{k}." for k in range(1, LAYERS)))}
    assert all(torch.equal(mine[name], theirs[name]) for name in mine)
    outputs = []
    for folder in (full, cut):
        model = AutoModelForCausalLM.from_pretrained(folder)
        model.model.layers[0].register_forward_hook(lambda module, args, output: outputs.append(output))
        with torch.no_grad():
            model.model(torch.arange(3, 19)[None])
    assert torch.equal(outputs[0], outputs[1])  # layer 1's output
    from behind_rope.llm.loading import (
        parameter_count,  # the whole model's size, also from its cut copy (the scale ladder)
    )

    assert parameter_count(model) == parameter_count(AutoModelForCausalLM.from_pretrained(full))
    assert fast.cache_gguf_model(tiny_gguf, tmp_path / "all", layers=LAYERS + 5)["layers"] == LAYERS


def test_the_larger_qwen_from_its_wheels_cut_to_its_first_layer(tmp_path, monkeypatch):
    """The scale ladder's 1.5B model as the pipeline assembles it from its 22 pinned wheels (`snakemake
    results/models/qwen2_5_coder_1_5b/model.gguf`): the pinned file, its shapes, and its first layer
    dequantised alone, equal to gguf-py's unpacking of the same tensors."""
    import hashlib

    import yaml
    from safetensors import safe_open

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = model_file("qwen2_5_coder_1_5b")
    pinned = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["pretrained"]["qwen2_5_coder_1_5b"]
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 24):
            digest.update(chunk)
    assert digest.hexdigest() == pinned["gguf_sha256"]
    summary = fast.cache_gguf_model(path, tmp_path / "hf", layers=1)
    assert summary == {"architecture": "qwen2", "layers": 1, "layers_in_file": 28}
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert (config["hidden_size"], config["num_attention_heads"], config["num_key_value_heads"]) == (1536, 12, 2)
    assert config["rope_parameters"]["rope_theta"] == 1e6 and config["dequantised_layers"] == {"first": 1, "of": 28}
    reader = fast.FastGGUFReader(path)
    tensors = {tensor.name: tensor for tensor in reader.tensors}
    with safe_open(tmp_path / "hf" / "model.safetensors", "pt") as saved:
        assert not any(name.startswith("model.layers.1.") for name in saved.keys())
        for ours, theirs in (("model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight"),
                             ("model.layers.0.mlp.down_proj.weight", "blk.0.ffn_down.weight")):
            tensor = tensors[theirs]
            assert_same_floats(saved.get_tensor(ours).numpy(), gguf.dequantize(tensor.data, tensor.tensor_type))


def test_fast_cache_rejects_a_file_that_is_not_gguf(tmp_path):
    path = tmp_path / "broken" / "model.gguf"
    path.parent.mkdir()
    path.write_bytes(b"not a gguf file" * 10)
    with pytest.raises(ModelSourceError, match="cannot read the GGUF file"):
        fast.cache_gguf_model_fast(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_tokenizer_step_equals_transformers_path(tiny_gguf, tmp_path, monkeypatch):
    """The tokenizer rule reads through fast_gguf_reading: the same files, byte for byte, and the swap undone."""
    from transformers import AutoTokenizer

    from behind_rope.data.fetch import save_tokenizer_from_gguf

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    save_tokenizer_from_gguf(tiny_gguf, tmp_path / "ours")
    assert gguf.GGUFReader is not fast.FastGGUFReader
    AutoTokenizer.from_pretrained(str(tiny_gguf.parent), gguf_file=tiny_gguf.name).save_pretrained(tmp_path / "theirs")
    theirs = sorted((tmp_path / "theirs").iterdir())
    assert [file.name for file in theirs] == sorted(file.name for file in (tmp_path / "ours").iterdir())
    for file in theirs:
        assert (tmp_path / "ours" / file.name).read_bytes() == file.read_bytes(), file.name
