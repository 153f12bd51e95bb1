"""Stage 1, the paper's derivation checked by sympy (g(i), h(i)) and its closed form against a
Monte-Carlo layer (claim C1).
"""
