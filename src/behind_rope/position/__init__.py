"""Where absolute position comes from (claims C6-C9): per-head statistics and position-0 patching (the two
sources' components of a score matrix are a metric of every score file: behind_rope.maths.position_sources).
The claims are decided in behind_rope.claims.position.
"""
