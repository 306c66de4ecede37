"""Reads of the judge lab: the human labels a project has for a scorer kind, the
corrections among them, the proposed examples, and every version's figures against
the labels on the same held-out items.

A label is the final human verdict of a reviewed ok result (`final_passed` where
`reviewed`, the same rows the run aggregates' agreement counts): a reviewer's answer,
an override, the decided answer of a team queue or an adjudication all end there. An
item judged in several runs and reviewed in more than one has one label, the latest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.http import Http404

from evalsite.accounts.selectors import project_get_for_user
from evalsite.datasets.models import Item
from evalsite.evals.models import (
    Comment,
    Override,
    Result,
    Run,
    RunScorer,
    ScorerConfig,
)
from evalsite.evals.scorers.selectors import scorer_get_for_user
from evalsite.review.models import LabCandidate, LabReplay, Review
from scoring.fewshot import DEFAULT_K, Correction, propose_examples
from scoring.inference import NotEnoughAnnotations, alternative_annotator_test
from scoring.inference.judge_agreement import Confusion, JudgeAgreement, judge_agreement

AnyUser = User | AnonymousUser
MAX_VERSIONS = 6


def lab_scorer_get_for_user(
    *, user: AnyUser, project_id: int, scorer_id: int, manage: bool = False
) -> ScorerConfig:
    """The scorer whose lab this is; 404 outside the project, 403 below owner when
    `manage` (replay costs money; promote changes what every run uses)."""
    scorer = scorer_get_for_user(user=user, pk=scorer_id, project_id=project_id)
    if manage:
        scorer.project = project_get_for_user(user=user, pk=project_id, manage=True)
    return scorer


def lab_candidate_get_for_user(
    *, user: AnyUser, project_id: int, scorer_id: int, pk: int, manage: bool = False
) -> LabCandidate:
    scorer = lab_scorer_get_for_user(
        user=user, project_id=project_id, scorer_id=scorer_id, manage=manage
    )
    candidate = (
        LabCandidate.objects.filter(
            pk=pk, project_id=project_id, scorer__name=scorer.name
        )
        .select_related("scorer", "scorer__judge", "promoted_to")
        .first()
    )
    if candidate is None:
        raise Http404("No such candidate.")
    candidate.project = scorer.project
    return candidate


@dataclass(frozen=True)
class Label:
    result_id: int
    item_id: int
    run_id: int
    run_name: str
    dataset_id: int
    judge_passed: bool | None
    human_passed: bool
    reviewed_by: str
    reviewed_at: datetime | None
    # The item's text: read only for the labels shown or proposed (`with_texts`).
    input: str = ""
    output: str = ""
    context: tuple[str, ...] = ()

    @property
    def corrected(self) -> bool:
        return self.judge_passed is not None and self.judge_passed != self.human_passed


def labels(*, project_id: int, kind: str) -> list[Label]:
    """One label per item, the latest, for every item of the project reviewed under a
    scorer of `kind`; newest first."""
    rows = (
        Result.objects.filter(
            run__project_id=project_id,
            run_scorer__kind=kind,
            status=Result.Status.OK,
            reviewed=True,
            final_passed__isnull=False,
        )
        # Labels come from ordinary runs: a lab replay or a bias audit is the judge
        # being tried, not the work the reviewers labelled.
        .filter(run__purpose=Run.Purpose.RUN)
        .order_by("item_id", "-reviewed_at", "-id")
        .values(
            "pk",
            "item_id",
            "run_id",
            "run__name",
            "run__dataset_id",
            "judge_passed",
            "final_passed",
            "reviewed_by__username",
            "reviewed_at",
        )
    )
    out: dict[int, Label] = {}
    for r in rows:
        if r["item_id"] in out:
            continue
        out[r["item_id"]] = Label(
            result_id=r["pk"],
            item_id=r["item_id"],
            run_id=r["run_id"],
            run_name=r["run__name"] or f"run {r['run_id']}",
            dataset_id=r["run__dataset_id"],
            judge_passed=r["judge_passed"],
            human_passed=bool(r["final_passed"]),
            reviewed_by=r["reviewed_by__username"] or "",
            reviewed_at=r["reviewed_at"],
        )
    return sorted(
        out.values(),
        key=lambda label: (label.reviewed_at is not None, label.reviewed_at),
        reverse=True,
    )


def with_texts(label_list: Sequence[Label]) -> list[Label]:
    """The labels with their items' input, output and context."""
    texts = {
        pk: (text_in or "", text_out or "", tuple(str(c) for c in (context or [])))
        for pk, text_in, text_out, context in Item.objects.filter(
            pk__in=[label.item_id for label in label_list]
        ).values_list("pk", "input", "output", "context")
    }
    return [
        replace(
            label,
            input=texts[label.item_id][0],
            output=texts[label.item_id][1],
            context=texts[label.item_id][2],
        )
        for label in label_list
    ]


def _notes(result_ids: Sequence[int]) -> dict[int, str]:
    """The reviewer's note on each result: the latest active override's note, else the
    latest review answer's or adjudication's, else the latest comment."""
    notes: dict[int, str] = {}
    sources: Iterable[Iterable[tuple[int, str]]] = (
        Override.objects.filter(result_id__in=result_ids, reverted_at__isnull=True)
        .exclude(note="")
        .order_by("-created_at", "-id")
        .values_list("result_id", "note"),
        Review.objects.filter(result_id__in=result_ids)
        .exclude(note="")
        .order_by("-created_at", "-id")
        .values_list("result_id", "note"),
        Comment.objects.filter(result_id__in=result_ids)
        .order_by("-created_at", "-id")
        .values_list("result_id", "body"),
    )
    for source in sources:
        for result_id, note in source:
            notes.setdefault(result_id, note.strip())
    return notes


def corrections(*, label_list: Sequence[Label]) -> list[Correction]:
    """The labels where the human verdict differs from the judge's, as example
    candidates keyed by item, with the reviewer's note as their explanation."""
    corrected = with_texts([label for label in label_list if label.corrected])
    notes = _notes([label.result_id for label in corrected])
    return [
        Correction(
            key=label.item_id,
            verdict="pass" if label.human_passed else "fail",
            input=label.input,
            output=label.output,
            context=label.context,
            explanation=notes.get(label.result_id, ""),
        )
        for label in sorted(corrected, key=lambda label: label.item_id)
    ]


def proposed_examples(
    *, label_list: Sequence[Label], k: int = DEFAULT_K, exclude: Iterable[int] = ()
) -> list[Correction]:
    """k corrections to insert as examples, leaving out the items in `exclude`
    (already examples of the candidate)."""
    skip = set(exclude)
    pool = [c for c in corrections(label_list=label_list) if c.key not in skip]
    return propose_examples(pool, k)


def lab_candidates(*, scorer: ScorerConfig) -> list[LabCandidate]:
    return list(
        LabCandidate.objects.filter(
            project_id=scorer.project_id, scorer__name=scorer.name
        ).select_related("created_by", "promoted_to")
    )


def current_scorer(*, scorer: ScorerConfig) -> ScorerConfig:
    """The version runs use now (the newest of the scorer's versions)."""
    newest = (
        ScorerConfig.objects.filter(
            project_id=scorer.project_id, name=scorer.name, archived=False
        )
        .select_related("judge")
        .order_by("-version", "-id")
        .first()
    )
    return newest or scorer


def options_digest(options: Any) -> str:
    return hashlib.sha256(
        json.dumps(options or {}, sort_keys=True, default=str).encode()
    ).hexdigest()[:16]


# ----------------------------------------------------------------- the comparison


@dataclass
class VersionColumn:
    """One version of the judge as replayed: where its verdicts come from."""

    label: str
    digest: str
    run_scorer_ids: list[int]
    candidate: LabCandidate | None = None
    is_current: bool = False
    figures: JudgeAgreement | None = None
    annotator: Any = None  # AlternativeAnnotatorTest
    annotator_refusal: str = ""
    pending: int = 0
    errors: int = 0


@dataclass
class Comparison:
    columns: list[VersionColumn] = field(default_factory=list)
    items: int = 0  # the items every figure is computed on
    held_out: int = 0  # label items left out because some version uses them as examples
    missing: int = 0  # label items some version has no ok verdict for (yet)
    labels: int = 0


def lab_replays(*, scorer: ScorerConfig) -> list[LabReplay]:
    return list(
        LabReplay.objects.filter(
            project_id=scorer.project_id, candidate__scorer__name=scorer.name
        )
        .select_related("candidate", "scorer", "created_by")
        .prefetch_related("current_runs", "candidate_runs")
    )


def _columns(
    replays: Sequence[LabReplay], current: ScorerConfig
) -> tuple[list[VersionColumn], set[int]]:
    """The newest replay of each candidate (up to MAX_VERSIONS − 1 of them), and the
    scorer's versions replayed beside them, one column per distinct set of options,
    each from a single replay (its newest) so a column never mixes two replays."""
    chosen: list[LabReplay] = []
    seen: set[int] = set()
    for replay in replays:  # newest first
        if replay.candidate_id in seen:
            continue
        seen.add(replay.candidate_id)
        chosen.append(replay)
        if len(chosen) >= MAX_VERSIONS - 1:
            break
    roles: dict[int, tuple[LabReplay, bool]] = {}
    for replay in chosen:
        for run in replay.current_runs.all():
            roles[run.pk] = (replay, False)
        for run in replay.candidate_runs.all():
            roles[run.pk] = (replay, True)
    current_digest = options_digest(current.options)
    columns: dict[str, VersionColumn] = {}
    owner: dict[str, int] = {}
    order = {replay.pk: i for i, replay in enumerate(chosen)}
    run_scorers = sorted(
        RunScorer.objects.filter(run_id__in=list(roles)).only(
            "pk", "run_id", "options"
        ),
        key=lambda rs: (order[roles[rs.run_id][0].pk], rs.run_id),
    )
    for rs in run_scorers:
        replay, is_candidate = roles[rs.run_id]
        digest = options_digest(rs.options)
        key = f"candidate:{replay.candidate_id}" if is_candidate else f"v:{digest}"
        if key not in columns:
            owner[key] = replay.pk
            columns[key] = VersionColumn(
                label=replay.candidate.name
                if is_candidate
                else f"{replay.scorer.name} v{replay.scorer.version}",
                digest=digest,
                run_scorer_ids=[],
                candidate=replay.candidate if is_candidate else None,
                is_current=not is_candidate and digest == current_digest,
            )
        if owner[key] == replay.pk:
            columns[key].run_scorer_ids.append(rs.pk)
    held_out = {
        int(item) for replay in chosen for item in replay.held_out if item is not None
    }
    ordered = sorted(
        columns.values(), key=lambda c: (c.candidate is not None, not c.is_current)
    )
    return ordered[:MAX_VERSIONS], held_out


def comparison(
    *, scorer: ScorerConfig, label_list: Sequence[Label], annotators: bool = True
) -> Comparison:
    """Every replayed version against the human labels, on the items every version
    judged and no version uses as an example."""
    current = current_scorer(scorer=scorer)
    columns, held_out = _columns(lab_replays(scorer=scorer), current)
    human = {label.item_id: label.human_passed for label in label_list}
    out = Comparison(columns=columns, labels=len(human))
    if not columns:
        return out
    verdicts: list[dict[int, bool]] = []
    for column in columns:
        mine: dict[int, bool] = {}
        for item_id, status, passed in Result.objects.filter(
            run_scorer_id__in=column.run_scorer_ids
        ).values_list("item_id", "status", "judge_passed"):
            if status == Result.Status.PENDING:
                column.pending += 1
            elif status == Result.Status.ERROR:
                column.errors += 1
            elif status == Result.Status.OK and passed is not None:
                mine[item_id] = bool(passed)
        verdicts.append(mine)
    candidates = set(human) - held_out
    common = set(candidates)
    for mine in verdicts:
        common &= set(mine)
    out.items = len(common)
    out.held_out = len(set(human) & held_out)
    out.missing = len(candidates - common)
    humans_by_item = _answers_by_item(common, label_list) if annotators else {}
    for column, mine in zip(columns, verdicts, strict=True):
        column.figures = judge_agreement(
            Confusion.from_pairs((mine[i], human[i]) for i in common)
        )
        if annotators:
            judge: dict[Hashable, Hashable | float] = {i: mine[i] for i in common}
            try:
                column.annotator = alternative_annotator_test(
                    judge,
                    humans_by_item,  # type: ignore[arg-type]
                )
            except NotEnoughAnnotations as exc:
                column.annotator_refusal = str(exc)
    return out


def _answers_by_item(
    items: set[int], label_list: Sequence[Label]
) -> dict[int, dict[str, bool]]:
    """Every reviewer's latest pass/fail answer on the labelled results of `items`."""
    result_to_item = {
        label.result_id: label.item_id for label in label_list if label.item_id in items
    }
    latest: dict[tuple[int, str], bool] = {}
    for result_id, username, passed in (
        Review.objects.filter(
            result_id__in=list(result_to_item),
            kind=Review.Kind.ANSWER,
            passed__isnull=False,
            reviewer__isnull=False,
        )
        .order_by("created_at", "id")
        .values_list("result_id", "reviewer__username", "passed")
    ):
        latest[(result_to_item[result_id], username)] = bool(passed)
    out: dict[int, dict[str, bool]] = {}
    for (item_id, username), passed in latest.items():
        out.setdefault(item_id, {})[username] = passed
    return out
