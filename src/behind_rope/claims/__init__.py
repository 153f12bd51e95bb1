"""The claims, one module per claim group, each holding the group's decision, the values and tables the paper
prints and the tables docs/results.md shows (so that changing what a claim measures touches one file):
decide (C1, C2, C4, and every claim gathered into results/claims.json), c3, c5 (C5a-C5d) with ladder (the
scale ladder), position (C6-C9) and revision (version 2's R0-R5).  Beside them the machinery: outcomes,
the seed rule, the pre-registration and its history, Figure 3's panel statistics, the verdict gate, the
words and cells the write-ups share (format for LaTeX, markdown for the docs) and tables, which writes the
docs' claims tables.
"""
