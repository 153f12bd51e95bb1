"""The score capture: a model's pre-softmax attention scores, read through an attention function registered
in transformers (``scores``: the registration, the recorder of running sums per layer and half, the signal
that stops a pass after the last layer recorded, ``record_scores``), and oneDNN's kernels for the linear
layers of a CPU pass (``kernels``).

Every stage that reads scores takes them from here: the score runs of twins and LLMs (behind_rope.llm),
the Gram matrices' check against the forward pass (behind_rope.twins.gram) and the patching
(behind_rope.position.patching).  It knows no model's source, no config and no stage.
"""
