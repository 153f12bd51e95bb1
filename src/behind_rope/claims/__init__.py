"""The claims' verdicts: the pre-registration (config/claims.yaml and its history), the seed rule,
the deciding functions of C1-C5, Figure 3's panel statistics, the scale ladder and the verdict gate.
"""
