"""C3's competence precondition: the order test tells a model that reads word order from one that cannot."""

import numpy as np
import pytest
import torch

from behind_rope.claims.c3 import uses_order
from behind_rope.twins.competence import order_gap, shuffled_context
from behind_rope.twins.model import TwinSize, build_twin

VOCAB, SEQ_LEN = 32, 24
POSITIONS = [4, 10, 20]


def _held_out(sequences=256, seed=0):
    """Sequences in which every token repeats the one two places before it: order is all there is to read."""
    rng = np.random.default_rng(seed)
    start = rng.integers(0, VOCAB, (sequences, 2))
    return np.tile(start, SEQ_LEN // 2)


class ReadsTwoBack(torch.nn.Module):
    """Predicts token t + 1 to be token t - 1: a model that uses the order of its context."""

    def forward(self, input_ids):
        logits = torch.full((*input_ids.shape, VOCAB), -5.0)
        logits[:, 1:].scatter_(-1, input_ids[:, :-1, None], 5.0)
        return type("Output", (), {"logits": logits})()


def _twin_that_cannot_read_order(kind: str):
    """A NoPE twin that is a bigram model (no attention output) or a bag-of-words model (one layer, uniform attention)."""
    layers = 1 if kind == "bag_of_words" else 2
    model = build_twin(TwinSize(vocab_size=VOCAB, hidden_size=32, layers=layers, heads=2, kv_heads=1, head_dim=16,
                                intermediate_size=48, max_positions=SEQ_LEN), "nope", seed=0)
    with torch.no_grad():
        for layer in model.model.layers:
            projection = layer.self_attn.o_proj if kind == "bigram" else layer.self_attn.q_proj
            projection.weight.zero_()
    return model


def test_the_shuffle_keeps_the_current_token_and_the_bag_of_earlier_ones():
    ids = np.arange(40).reshape(2, 20)
    shuffled = shuffled_context(ids, 10, seed=0)
    assert (shuffled[:, 10:] == ids[:, 10:]).all() and (np.sort(shuffled[:, :10]) == ids[:, :10]).all()
    assert (shuffled[:, :10] != ids[:, :10]).any()


def test_a_model_that_reads_word_order_shows_a_gap_that_clears_the_bound():
    gap = order_gap(ReadsTwoBack(), _held_out(), POSITIONS)
    assert gap["mean_gap"] > 1 and all(row["gap"] > 1 for row in gap["positions"].values())
    assert uses_order({"order_gap": gap}, min_order_gap=0.05, confidence=0.95)["passed"]


@pytest.mark.parametrize("kind", ["bigram", "bag_of_words"])
def test_a_bigram_or_bag_of_words_twin_fails_competence(kind):
    gap = order_gap(_twin_that_cannot_read_order(kind), _held_out(), POSITIONS)
    assert abs(gap["mean_gap"]) < 1e-5
    assert not uses_order({"order_gap": gap}, min_order_gap=0.05, confidence=0.95)["passed"]


def test_an_order_position_without_a_next_token_is_refused():
    with pytest.raises(ValueError, match="order-test position"):
        order_gap(ReadsTwoBack(), _held_out(8), [SEQ_LEN - 1])


def test_one_pass_over_the_longest_prefix_gives_each_positions_loss_as_its_own_prefix_does():
    # The causal mask keeps a position's logits from later tokens, so one forward pass serves every position.
    from behind_rope.twins.competence import _next_token_losses

    model = build_twin(TwinSize(vocab_size=VOCAB, hidden_size=32, layers=2, heads=2, kv_heads=1, head_dim=16,
                                intermediate_size=48, max_positions=SEQ_LEN), "nope", seed=0).eval()
    ids = torch.from_numpy(np.random.default_rng(1).integers(0, VOCAB, (40, SEQ_LEN)))
    together = _next_token_losses(model, ids, POSITIONS, batch_size=16)
    assert together.shape == (40, len(POSITIONS))
    for column, position in enumerate(POSITIONS):
        with torch.no_grad():
            logits = model(input_ids=ids[:, : position + 1]).logits[:, -1]
        alone = torch.nn.functional.cross_entropy(logits, ids[:, position + 1], reduction="none").numpy()
        np.testing.assert_allclose(together[:, column], alone, rtol=1e-5, atol=1e-6)
