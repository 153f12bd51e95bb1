"""The shared mathematics: rotary position embedding (and NTK-aware scaling of its base), the metrics
of a mean score matrix, and the score decomposition.  Every stage reads them from here.
"""
