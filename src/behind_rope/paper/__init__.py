"""The paper: the numbers, tables and prose parts generated from results/ (each claim group's come from its
module in behind_rope.claims) and the LaTeX build.
"""
