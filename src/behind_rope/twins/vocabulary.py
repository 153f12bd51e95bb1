"""The twins' vocabulary and the tokens they read, in numpy alone (the twin-inputs step needs no torch).

The twins see the most frequent tokenizer ids of the training split plus one shared id for every
other token.
"""

from __future__ import annotations

import numpy as np


def twin_vocabulary(train_ids: np.ndarray, vocab_size: int) -> np.ndarray:
    """The ``vocab_size - 1`` most frequent tokenizer ids of the training split (ties: lower id first).

    The twins see these ids plus one shared id for every other token: a 49k-way output layer
    would cost most of the CPU budget for tokens the small models could not learn anyway.
    """
    counts = np.bincount(train_ids.ravel())
    order = np.lexsort((np.arange(len(counts)), -counts))
    return np.sort(order[: vocab_size - 1]).astype(np.int64)


def remap(ids: np.ndarray, vocabulary: np.ndarray) -> np.ndarray:
    """Tokenizer ids to twin ids: the position in ``vocabulary``, or ``len(vocabulary)`` for the rest."""
    position = np.searchsorted(vocabulary, ids)
    known = (position < len(vocabulary)) & (vocabulary[np.minimum(position, len(vocabulary) - 1)] == ids)
    return np.where(known, position, len(vocabulary)).astype(np.int64)


def unigram_loss(train: np.ndarray, valid: np.ndarray, vocab_size: int) -> float:
    """Cross-entropy (nats) on the validation targets of add-one token frequencies from training.

    Targets are positions 1.. of each sequence, the same tokens the language-model loss scores.
    """
    counts = np.bincount(train.ravel(), minlength=vocab_size) + 1.0
    log_p = np.log(counts / counts.sum())
    return float(-log_p[valid[:, 1:]].mean())


def unigram_tokens(train: np.ndarray, vocab_size: int, shape: tuple[int, int], seed: int) -> np.ndarray:
    """I.i.d. tokens drawn from the training frequencies: text statistics without any word order."""
    counts = np.bincount(train.ravel(), minlength=vocab_size).astype(float)
    return np.random.default_rng(seed).choice(vocab_size, size=shape, p=counts / counts.sum())


def twin_input_sets(vocabulary, valid, train, seq_len: int, sequences: int, probe_sequences: int,
                    seed: int) -> dict[str, np.ndarray]:
    """The tokens a twin is analysed on, in its vocabulary: the first ``seq_len`` tokens of ``sequences`` held-out
    sequences ("text"), and ``probe_sequences`` of i.i.d. tokens with the training frequencies ("random")."""
    vocabulary, valid = np.load(vocabulary), np.load(valid)
    if valid.shape[1] < seq_len:
        raise ValueError(f"held-out sequences have {valid.shape[1]} tokens, fewer than the {seq_len} to analyse")
    train = remap(np.load(train), vocabulary)
    return {"text": remap(valid[:sequences, :seq_len], vocabulary),
            "random": unigram_tokens(train, len(vocabulary) + 1, (probe_sequences, seq_len), seed)}
