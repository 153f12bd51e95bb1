"""Figure rendering: the figure table (workflow/figures.yaml) and the plotting helpers every figure
script uses.
"""
