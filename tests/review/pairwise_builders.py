"""Two runs whose datasets hold two models' outputs for the same inputs, for the
pairwise review tests."""

from __future__ import annotations

from typing import Any

from evalsite.accounts.models import Project
from evalsite.evals.models import Run
from evalsite.review.models import ReviewQueue
from evalsite.review.pairwise.services import pairwise_queue_create
from tests.factories import DatasetFactory, RunFactory


def make_model_runs(
    project: Project,
    *,
    n: int = 4,
    same_output: tuple[int, ...] = (),
    b_order: str = "reversed",
    b_input_spacing: bool = True,
    name_a: str = "Model A",
    name_b: str = "Model B",
    extra_b: int = 0,
) -> tuple[Run, Run]:
    """Run A on dataset "answers" v1 and run B on its v2: item i asks "question i"
    (metadata id "q<i>"), A answers "A answer i", B "B answer i" (A's text for the
    indexes in `same_output`). B's rows come in reverse order, with the input's
    whitespace changed unless told otherwise, so matching cannot lean on positions or
    exact text; `extra_b` adds B items that match nothing."""
    rows_a = [
        {
            "input": f"question {i}",
            "output": f"A answer {i}",
            "metadata": {"id": f"q{i}"},
        }
        for i in range(n)
    ]
    rows_b: list[dict[str, Any]] = [
        {
            "input": f"  question\n{i} " if b_input_spacing else f"question {i}",
            "output": f"A answer {i}" if i in same_output else f"B answer {i}",
            "metadata": {"id": f"q{i}"},
            "reference": "",
        }
        for i in range(n)
    ]
    rows_b += [
        {"input": f"extra {j}", "output": "x", "metadata": {"id": f"x{j}"}}
        for j in range(extra_b)
    ]
    if b_order == "reversed":
        rows_b.reverse()
    ds_a = DatasetFactory(project=project, name="answers", rows=rows_a)
    ds_b = DatasetFactory(project=project, name="answers", rows=rows_b)
    run_a = RunFactory(project=project, dataset=ds_a, name=name_a)
    run_b = RunFactory(project=project, dataset=ds_b, name=name_b)
    return run_a, run_b


def pairwise_queue(runs: tuple[Run, Run], user: Any, **kwargs: Any) -> ReviewQueue:
    """A pairwise queue of run A (runs[0]) against run B, made by `user`."""
    run_a, run_b = runs
    return pairwise_queue_create(run_a=run_a, run_b=run_b, user=user, **kwargs)
