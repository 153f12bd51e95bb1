"""Where absolute position comes from (claims C6-C9): per-head statistics, the two sources' measures,
position-0 patching, and the decisions of those claims.
"""
