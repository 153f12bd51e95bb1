"""The command line the Snakemake rules call, ``python -m behind_rope <step>``: one module per rules file.

Each step is a thin handler decorated with ``@step`` (its parser sits in the decorator), which
reads its settings as one JSON object (``--settings``, built by the rule from the config) and its
files as flags, calls the library, and writes its outputs atomically.  The dispatcher is in
``behind_rope.__main__``; this package imports nothing, so a step's code digest covers only the
modules it really runs (``behind_rope.pipeline.codedigest``).
"""
