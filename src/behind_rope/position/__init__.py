"""Where absolute position comes from (claims C6-C9): per-head statistics, position-0 patching, and the
decisions of those claims (the two sources' components of a score matrix are a metric of every score
file: behind_rope.maths.position_sources).
"""
