"""Stage 2, the parameter-free simulations: the variants of the config (``simulation.variants``) and
the stacked attention layers that produce their mean scores (Figures 2 and 4, claims C2 and C4).
"""
