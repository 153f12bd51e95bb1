"""The paper: the numbers, tables and prose parts generated from results/ (one module per group of
claims), their formatting, and the LaTeX build.
"""
