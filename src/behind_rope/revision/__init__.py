"""Version 2 of the paper: its parameter-free stack and the recency probability (``stack``), and the closed
form of its rescaling; claims R0-R5 are decided in behind_rope.claims.revision."""
