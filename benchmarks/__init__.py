"""Measurements of the workflow, each a module run from the project root: ``python -m benchmarks.<name>``
(``run_benchmarks`` the cold run; each module's docstring says what it measures and which doc table it writes)."""
