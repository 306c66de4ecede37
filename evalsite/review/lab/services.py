"""Writes of the judge lab: candidates (drafts of a scorer's next judge), their
few-shot examples, replays (lab runs through evals' run services) and promotion
(the scorer's next version, through evals' scorer services)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError, ConflictError
from evalsite.datasets.models import Dataset
from evalsite.evals.models import Run, ScorerConfig
from evalsite.evals.runs.lab import LabPreview, LabVersion, lab_preview
from evalsite.evals.runs.services import run_cancel, run_start
from evalsite.evals.scorers.services import scorer_options_clean, scorer_update
from evalsite.lib.text import text_check_storable
from evalsite.review.lab.selectors import Label, current_scorer, proposed_examples
from evalsite.review.models import LabCandidate, LabReplay
from scoring.fewshot import DEFAULT_K, Correction
from scoring.judge_options import (
    MAX_EXAMPLE_CHARS,
    MAX_EXAMPLE_CHUNKS,
    MAX_EXAMPLES,
)

MAX_TEXT = MAX_EXAMPLE_CHARS
VERDICTS = ("pass", "fail")


def _who(user: User | None) -> str:
    return (
        user.get_username() if user is not None and user.is_authenticated else "system"
    )


def _audit(
    candidate: LabCandidate, user: User | None, action: str, summary: str, **kw: Any
) -> None:
    audit_event(
        project=candidate.project,
        actor=user,
        action=action,
        summary=f"{_who(user)} {summary}",
        object_type="lab",
        object_id=candidate.pk,
        object_label=candidate.name,
        **kw,
    )


def _clean(kind: str, options: dict[str, Any]) -> dict[str, Any]:
    return scorer_options_clean(kind=kind, options=options)


def _editable(candidate: LabCandidate) -> None:
    if candidate.promoted_at is not None:
        raise ConflictError(
            "This candidate was promoted; start a new candidate to change it."
        )


def lab_candidate_create(
    *, scorer: ScorerConfig, user: User | None, name: str = ""
) -> LabCandidate:
    """A candidate starting from the scorer's current options."""
    base = current_scorer(scorer=scorer)
    name = (name or "").strip() or f"{base.name} candidate"
    if len(name) > 200:
        raise ApplicationError(
            "The name is too long.", field_errors={"name": "At most 200 characters."}
        )
    text_check_storable(name, field="name")
    with transaction.atomic():
        candidate = LabCandidate.objects.create(
            project_id=base.project_id,
            scorer=base,
            name=name,
            options=copy.deepcopy(base.options or {}),
            example_items=[None] * len((base.options or {}).get("examples") or []),
            created_by=user if user and user.is_authenticated else None,
        )
        candidate.project = scorer.project
        _audit(candidate, user, "lab.create", f"drafted judge candidate “{name}”")
    return candidate


def lab_candidate_update(
    *,
    candidate: LabCandidate,
    user: User | None,
    name: str,
    rubric: str,
    judge_model: str,
    judge_temperature: float | None,
) -> LabCandidate:
    """Change a candidate's name, rubric, model and temperature (validated like a
    scorer edit; nothing is saved when a value is refused)."""
    _editable(candidate)
    name = name.strip()
    if not name:
        raise ApplicationError(
            "A candidate needs a name.", field_errors={"name": "Required."}
        )
    text_check_storable(name, field="name")
    options = copy.deepcopy(candidate.options or {})
    for key, value in (
        ("rubric", rubric.strip()),
        ("judge_model", judge_model.strip()),
        ("judge_temperature", judge_temperature),
    ):
        if value in ("", None):
            options.pop(key, None)
        else:
            options[key] = value
    options = _clean(candidate.scorer.kind, options)
    before = {"name": candidate.name, "options": candidate.options}
    candidate.name = name[:200]
    candidate.options = options
    with transaction.atomic():
        candidate.save(update_fields=["name", "options", "updated_at"])
        _audit(
            candidate,
            user,
            "lab.change",
            f"changed judge candidate “{candidate.name}”",
            before=before,
            after={"name": candidate.name, "options": candidate.options},
        )
    return candidate


def _example(
    *, input: str, output: str, context: Sequence[str], verdict: str, explanation: str
) -> dict[str, Any]:
    if verdict not in VERDICTS:
        raise ApplicationError(
            "An example's verdict is pass or fail.",
            field_errors={"verdict": "Choose pass or fail."},
        )
    if not output.strip():
        raise ApplicationError(
            "An example needs an output.", field_errors={"output": "Required."}
        )
    for text in (input, output, explanation, *context):
        if len(text) > MAX_TEXT:
            raise ApplicationError(
                f"An example's text is limited to {MAX_TEXT} characters."
            )
    return {
        "input": input,
        "output": output,
        "context": list(context),
        "verdict": verdict,
        "explanation": explanation.strip(),
    }


def _set_examples(
    candidate: LabCandidate,
    user: User | None,
    examples: list[dict[str, Any]],
    items: list[int | None],
    summary: str,
) -> LabCandidate:
    if len(examples) > MAX_EXAMPLES:
        raise ApplicationError(f"A judge takes at most {MAX_EXAMPLES} examples.")
    options = copy.deepcopy(candidate.options or {})
    if examples:
        options["examples"] = examples
    else:
        options.pop("examples", None)
    options = _clean(candidate.scorer.kind, options)
    with transaction.atomic():
        locked = LabCandidate.objects.select_for_update().get(pk=candidate.pk)
        if locked.updated_at != candidate.updated_at:
            raise ConflictError("The candidate changed meanwhile; reload the lab.")
        candidate.options = options
        candidate.example_items = items
        candidate.save(update_fields=["options", "example_items", "updated_at"])
        _audit(candidate, user, "lab.change", summary)
    return candidate


def _current_examples(
    candidate: LabCandidate,
) -> tuple[list[dict[str, Any]], list[int | None]]:
    examples = list((candidate.options or {}).get("examples") or [])
    items = list(candidate.example_items or [])
    items += [None] * (len(examples) - len(items))
    return examples, items[: len(examples)]


def lab_example_add(
    *,
    candidate: LabCandidate,
    user: User | None,
    input: str,
    output: str,
    context: Sequence[str],
    verdict: str,
    explanation: str,
    item_id: int | None = None,
) -> LabCandidate:
    """Append one example; `item_id` names the item it comes from, so replays hold it
    out."""
    _editable(candidate)
    examples, items = _current_examples(candidate)
    if item_id is not None and item_id in items:
        raise ConflictError("That item is already an example of this candidate.")
    examples.append(
        _example(
            input=input,
            output=output,
            context=context,
            verdict=verdict,
            explanation=explanation,
        )
    )
    items.append(item_id)
    return _set_examples(
        candidate,
        user,
        examples,
        items,
        f"added a {verdict} example to judge candidate “{candidate.name}”",
    )


def lab_example_remove(
    *, candidate: LabCandidate, user: User | None, position: int
) -> LabCandidate:
    """Remove example number `position` (from 1)."""
    _editable(candidate)
    examples, items = _current_examples(candidate)
    if not 1 <= position <= len(examples):
        raise ApplicationError(f"There is no example {position}.")
    del examples[position - 1]
    del items[position - 1]
    return _set_examples(
        candidate,
        user,
        examples,
        items,
        f"removed example {position} of judge candidate “{candidate.name}”",
    )


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def lab_examples_add_proposed(
    *,
    candidate: LabCandidate,
    user: User | None,
    label_list: Sequence[Label],
    k: int = DEFAULT_K,
    only: int | None = None,
) -> list[Correction]:
    """Insert the proposed examples (or only the one of item `only`) that the
    candidate does not have yet; returns those added."""
    _editable(candidate)
    examples, items = _current_examples(candidate)
    proposed = proposed_examples(
        label_list=label_list, k=k, exclude=[i for i in items if i is not None]
    )
    if only is not None:
        proposed = [c for c in proposed if c.key == only]
        if not proposed:
            raise ApplicationError(
                "That correction is not among the proposed examples."
            )
    if not proposed:
        raise ApplicationError(
            "No correction left to propose: the reviewers have not overruled the "
            "judge on any other labelled item."
        )
    for c in proposed:
        # An item's text may be longer than an example may be: cut, never refused.
        examples.append(
            _example(
                input=_cut(c.input),
                output=_cut(c.output),
                context=[_cut(chunk) for chunk in c.context[:MAX_EXAMPLE_CHUNKS]],
                verdict=c.verdict,
                explanation=_cut(c.explanation),
            )
        )
        items.append(int(c.key))  # type: ignore[call-overload]
    _set_examples(
        candidate,
        user,
        examples,
        items,
        f"added {len(proposed)} proposed example(s) to judge candidate “{candidate.name}”",
    )
    return proposed


# -------------------------------------------------------------------- replay


def _versions(candidate: LabCandidate) -> tuple[ScorerConfig, list[LabVersion]]:
    current = current_scorer(scorer=candidate.scorer)
    return current, [
        LabVersion(name=f"{current.name} v{current.version}", options=current.options),
        LabVersion(name=candidate.name, options=candidate.options),
    ]


def _replay_items(
    candidate: LabCandidate, label_list: Sequence[Label]
) -> tuple[dict[int, list[int]], list[int]]:
    """Label items by dataset, minus the candidate's examples' items (held out)."""
    held = sorted({int(i) for i in candidate.example_items or [] if i is not None})
    by_dataset: dict[int, list[int]] = {}
    for label in label_list:
        if label.item_id not in held:
            by_dataset.setdefault(label.dataset_id, []).append(label.item_id)
    return by_dataset, held


def lab_replay_preview(
    *, candidate: LabCandidate, label_list: Sequence[Label]
) -> LabPreview:
    current, versions = _versions(candidate)
    by_dataset, _held = _replay_items(candidate, label_list)
    items = [i for ids in by_dataset.values() for i in ids]
    return lab_preview(scorer=current, versions=versions, item_ids=items)


def lab_replay_start(
    *, candidate: LabCandidate, user: User | None, label_list: Sequence[Label]
) -> LabReplay:
    """Judge every labelled item but the examples' own with the current version and
    with the candidate: per dataset the items come from, a lab run of each, through
    the run service (same dispatcher, limiter and cancel as any run)."""
    current, versions = _versions(candidate)
    by_dataset, held = _replay_items(candidate, label_list)
    if not by_dataset:
        raise ApplicationError(
            "Nothing to replay: no human-labelled item outside the candidate's examples."
        )
    if current.judge_id is None:
        raise ApplicationError(f"{current} has no judge connection.")
    current.project = candidate.project
    # Checked before any run starts, so a refused candidate starts nothing.
    _clean(current.kind, candidate.options)
    datasets = {d.pk: d for d in Dataset.objects.filter(pk__in=list(by_dataset))}
    started: list[tuple[str, Run]] = []
    try:
        for dataset_id, ids in sorted(by_dataset.items()):
            for role, options in (("current", None), ("candidate", candidate.options)):
                run = run_start(
                    project=candidate.project,
                    user=user,
                    dataset=datasets[dataset_id],
                    scorers=[current],
                    name=f"lab: {candidate.name if options else versions[0].name}",
                    purpose=Run.Purpose.LAB,
                    item_ids=ids,
                    scorer_options={current.pk: options} if options else None,
                )
                started.append((role, run))
    except ApplicationError:
        for _role, run in started:
            run.project = candidate.project
            with contextlib.suppress(ConflictError):  # finished already
                run_cancel(run=run, user=user)
        raise
    with transaction.atomic():
        replay = LabReplay.objects.create(
            project_id=candidate.project_id,
            candidate=candidate,
            scorer=current,
            held_out=held,
            items=sum(len(ids) for ids in by_dataset.values()),
            created_by=user if user and user.is_authenticated else None,
        )
        replay.current_runs.set([run for role, run in started if role == "current"])
        replay.candidate_runs.set([run for role, run in started if role == "candidate"])
        _audit(
            candidate,
            user,
            "lab.replay",
            f"replayed judge candidate “{candidate.name}” and {current} on "
            f"{replay.items} labelled items ({len(held)} held out)",
            after={"replay_id": replay.pk, "items": replay.items, "held_out": held},
        )
    return replay


def lab_replay_cancel(*, replay: LabReplay, user: User | None) -> int:
    """Cancel the replay's runs still queued or running; how many were."""
    cancelled = 0
    active = (Run.Status.QUEUED, Run.Status.RUNNING)
    runs = [
        *replay.current_runs.filter(status__in=active),
        *replay.candidate_runs.filter(status__in=active),
    ]
    for run in runs:
        run.project = replay.project
        try:
            run_cancel(run=run, user=user)
        except ConflictError:
            continue  # it finished meanwhile
        cancelled += 1
    if not cancelled:
        raise ConflictError("Nothing to cancel: the replay has finished.")
    return cancelled


# -------------------------------------------------------------------- promote


def lab_candidate_promote(
    *, candidate: LabCandidate, user: User | None
) -> ScorerConfig:
    """Save the candidate as the scorer's next version: the next run judges with it
    (and records its judge version)."""
    with transaction.atomic():
        # Locked: two promotions of one candidate at once make one version, not two.
        locked = LabCandidate.objects.select_for_update().get(pk=candidate.pk)
        _editable(locked)
        current = current_scorer(scorer=candidate.scorer)
        current.project = candidate.project
        new = scorer_update(scorer=current, user=user, options=candidate.options)
        candidate.promoted_to = new
        candidate.promoted_at = timezone.now()
        candidate.save(update_fields=["promoted_to", "promoted_at", "updated_at"])
        _audit(
            candidate,
            user,
            "lab.promote",
            f"promoted judge candidate “{candidate.name}” to {new} (version {new.version})",
            before={"scorer_id": current.pk, "version": current.version},
            after={"scorer_id": new.pk, "version": new.version},
        )
    return new
