"""How the workflow runs its steps, apart from any science: the code digests that rerun a step when
the library code it imports changes, the memory-allocator settings every job gets, and the helpers the
rules files call while Snakemake parses them.
"""
