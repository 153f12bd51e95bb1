"""Stage 3, the small NoPE and RoPE twins: their vocabulary, model, training and the Gram matrices of
Figure 3 (claim C3).
"""
