"""The shared mathematics: rotary position embedding (and NTK-aware scaling of its base), the metrics
of a mean score matrix, the score decomposition and the two sources of absolute position measured on
it.  Every stage reads them from here.
"""
