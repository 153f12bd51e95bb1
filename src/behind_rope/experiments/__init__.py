"""The experiments the config declares, and what each rule reads of them, one module per concern.

Experiments are data: simulation variants (``simulation.variants``), trained twins
(``training.twins``), the token sets the models read (``twin_analysis``, ``llm.inputs``) and the
score runs made on them, and model variants changed at inference (``llm.variants``).  Each
function here reads the validated config (behind_rope.config, which fills in every default and
imports nothing from here) and returns plain JSON-able values or paths:

- ``runs``: which twins, models, variants and runs there are, and the runs each claim reads;
- ``paths``: where every file lives;
- ``steps``: the settings each rule hands its step (``--settings``);
- ``resources``: what a job asks the scheduler for;
- ``pins``: the sha256 and commits that pin the raw inputs.
"""
