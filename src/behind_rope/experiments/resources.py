"""What a job asks the scheduler for: the memory, wall time and GPUs of its resource group (the config's
``resources``), and the group of a score run.
"""

from __future__ import annotations

from behind_rope.experiments.runs import model_kind


def job_resources(group: dict, every_key: bool = False) -> dict:
    """What a job of one resource group asks for: memory, wall time and, if the group has any, GPUs.

    A group without GPUs declares none, so a cluster profile never routes its jobs to GPU nodes;
    ``every_key`` gives gpu 0 and no GPU type instead, for a rule whose group depends on its wildcards.
    """
    asked = {"mem_mb": group["mem_mb"], "runtime": group["runtime"]}
    if group.get("gpus"):
        asked |= {"gpu": group["gpus"], **({"gpu_model": group["gpu_model"]} if "gpu_model" in group else {})}
    return {"gpu": 0, "gpu_model": "", **asked} if every_key else asked


def score_group(config: dict, model: str) -> str:
    """The resource group (config: resources) of a score run of ``model``."""
    return "twin_analysis" if model_kind(config, model) == "twin" else "llm"
