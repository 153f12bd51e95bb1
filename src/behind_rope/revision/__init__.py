"""Version 2 of the paper: its parameter-free stack, the recency probability (``stack``), and claims R0-R5
decided on them with their write-up (``claims``)."""
