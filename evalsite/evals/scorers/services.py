"""Scorer configs: a kind, validated options (scale, threshold, penalties, …) and a judge."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q

from evalsite.accounts.models import Project
from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.agentdata import AGENT_FIELDS, JSON_FIELDS
from evalsite.datasets.models import Dataset
from evalsite.evals.models import JudgeConnection, RunScorer, ScorerConfig
from evalsite.lib.text import text_check_storable, unstorable_in
from scoring import KINDS, OptionsError, UnknownKindError, validate_options
from scoring.judge_options import check_repeat

# "Not given" (None is a meaningful threshold for factuality).
UNSET: Any = object()


# What a dataset item holds (Item.as_case's keys). A kind that needs more is in the
# scoring library but not offered here until datasets can carry it: every item would
# otherwise end in "the item has no <field>".
ITEM_FIELDS = frozenset({"input", "output", "context", "reference", *AGENT_FIELDS})
SCORER_KINDS = tuple(
    name
    for name, spec in KINDS.items()
    if spec.runnable and set(spec.required_fields) <= ITEM_FIELDS
)


# How to tell that an item has a field: a filter per field (text fields: not empty).
_HAS_FIELD: dict[str, Q] = {
    "input": ~Q(input=""),
    "output": ~Q(output=""),
    "reference": ~Q(reference=""),
    "context": ~Q(context=[]),
    "system_prompt": ~Q(system_prompt=""),
    "baseline_output": ~Q(baseline_output=""),
    **{name: Q(**{f"{name}__isnull": False}) for name in JSON_FIELDS},
}


def scorer_fields_missing(
    *, dataset: Dataset, kinds: Iterable[str]
) -> dict[str, list[str]]:
    """For each kind, the fields it requires that no item of `dataset` has: a run of
    it would end every result in "the item has no <field>". One EXISTS per field."""
    found: dict[str, bool] = {}
    missing: dict[str, list[str]] = {}
    for kind in kinds:
        for name in KINDS[kind].required_fields if kind in KINDS else ():
            if name not in found:
                has = _HAS_FIELD.get(name)
                found[name] = has is None or dataset.items.filter(has).exists()
            if not found[name]:
                missing.setdefault(kind, []).append(name)
    return missing


def scorer_options_clean(
    *, kind: str, options: dict[str, Any] | None, threshold: Any = UNSET
) -> dict[str, Any]:
    """The full validated options; `threshold`, when given, replaces options.threshold.

    OptionsError becomes ApplicationError with field_errors {"options.<field>": message}.
    """
    if kind not in SCORER_KINDS:
        needs = ", ".join(KINDS[kind].required_fields) if kind in KINDS else ""
        raise ApplicationError(
            f"Scorer kind {kind!r} needs {needs}, which datasets cannot hold yet."
            if needs
            else f"Unknown scorer kind {kind!r}.",
            field_errors={"kind": f"Choose one of: {', '.join(SCORER_KINDS)}."},
        )
    merged = copy.deepcopy(options) if options else {}
    if not isinstance(merged, dict):
        raise ApplicationError(
            "options must be a JSON object.",
            field_errors={"options": "Must be a JSON object."},
        )
    if threshold is not UNSET:
        merged["threshold"] = threshold
    unstorable = unstorable_in(merged)
    if unstorable:
        message = f"Contains {unstorable}, which cannot be stored; remove it."
        raise ApplicationError(f"options: {message}", field_errors={"options": message})
    try:
        return validate_options(kind, merged)
    except (OptionsError, UnknownKindError) as exc:
        field = getattr(exc, "field", "") or ""
        key = f"options.{field}" if field else "options"
        raise ApplicationError(str(exc), field_errors={key: str(exc)}) from exc


def _judge_for(
    *, project: Project, kind: str, judge: JudgeConnection | None
) -> JudgeConnection | None:
    if not KINDS[kind].needs_judge:
        return None  # text kinds are computed locally; a judge would be misleading
    if judge is None:
        raise ApplicationError(
            f"{KINDS[kind].label} needs a judge connection.",
            field_errors={"judge_id": "Choose a judge connection."},
        )
    if judge.project_id != project.pk:
        raise ApplicationError(
            "That judge connection is not in this project.",
            field_errors={"judge_id": "Not in this project."},
        )
    return judge


def _check_repeat(
    kind: str, options: dict[str, Any], judge: JudgeConnection | None
) -> None:
    """A judge asked more than once must answer at a temperature above 0."""
    if judge is None:
        return
    try:
        check_repeat(kind, options, judge.temperature)
    except OptionsError as exc:
        raise ApplicationError(
            str(exc), field_errors={"options.repeat": str(exc)}
        ) from exc


def _clean_name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise ApplicationError(
            "A scorer needs a name.", field_errors={"name": "Required."}
        )
    if len(name) > 200:
        raise ApplicationError(
            "Scorer name is too long.", field_errors={"name": "At most 200 characters."}
        )
    text_check_storable(name, field="name")
    return name


def _audit(
    scorer: ScorerConfig,
    user: User | None,
    action: str,
    summary: str,
    **changes: Any,
) -> None:
    who = (
        user.get_username() if user is not None and user.is_authenticated else "system"
    )
    audit_event(
        project=scorer.project,
        actor=user,
        action=action,
        summary=f"{who} {summary}",
        object_type="scorer",
        object_id=scorer.pk,
        object_label=str(scorer),
        **changes,
    )


def _settings(scorer: ScorerConfig) -> dict[str, Any]:
    return {
        "name": scorer.name,
        "kind": scorer.kind,
        "judge_id": scorer.judge_id,
        "options": scorer.options,
        "version": scorer.version,
    }


@transaction.atomic
def scorer_create(
    *,
    project: Project,
    user: User | None,
    name: str,
    kind: str,
    judge: JudgeConnection | None = None,
    options: dict[str, Any] | None = None,
    threshold: Any = UNSET,
) -> ScorerConfig:
    name = _clean_name(name)
    full = scorer_options_clean(kind=kind, options=options, threshold=threshold)
    judge = _judge_for(project=project, kind=kind, judge=judge)
    _check_repeat(kind, full, judge)
    scorer = ScorerConfig.objects.create(
        project=project,
        name=name,
        kind=kind,
        judge=judge,
        options=full,
        created_by=user if user and user.is_authenticated else None,
    )
    _audit(
        scorer,
        user,
        "scorer.create",
        f"created scorer “{scorer}” ({kind})",
        after=_settings(scorer),
    )
    return scorer


@transaction.atomic
def scorer_update(
    *,
    scorer: ScorerConfig,
    user: User | None,
    name: str | None = None,
    judge: JudgeConnection | None = UNSET,
    options: dict[str, Any] | None = None,
    threshold: Any = UNSET,
) -> ScorerConfig:
    """Edit a scorer. When a run used it, the edit becomes a new version (parent = the
    old one, which is archived) so the run's snapshot keeps pointing at what it ran.

    `options` (when given) is validated as a whole, on top of the defaults; to change
    one option pass the current options with that value changed.
    """
    locked = ScorerConfig.objects.select_for_update().get(pk=scorer.pk)
    if locked.archived:
        raise ApplicationError(
            "This is an old version of the scorer; edit the newest version instead."
        )
    new_name = _clean_name(name) if name is not None else locked.name
    base = options if options is not None else locked.options
    full = scorer_options_clean(kind=locked.kind, options=base, threshold=threshold)
    new_judge = locked.judge if judge is UNSET else judge
    new_judge = _judge_for(project=locked.project, kind=locked.kind, judge=new_judge)
    _check_repeat(locked.kind, full, new_judge)
    if not RunScorer.objects.filter(scorer=locked).exists():
        before = _settings(locked)
        locked.name, locked.options, locked.judge = new_name, full, new_judge
        locked.range_problem = ""  # the options were just checked (evals 0006's flag)
        locked.save(update_fields=["name", "options", "judge", "range_problem"])
        after = _settings(locked)
        changed = [name for name in after if after[name] != before[name]]
        if changed:
            _audit(
                locked,
                user,
                "scorer.change",
                f"changed scorer “{locked}”: {', '.join(changed)}",
                before={name: before[name] for name in changed},
                after={name: after[name] for name in changed},
            )
        return locked
    return scorer_version_create(
        parent=locked,
        project_id=locked.project_id,
        name=new_name,
        kind=locked.kind,
        judge=new_judge,
        options=full,
        user=user,
    )


@transaction.atomic
def scorer_version_create(
    *,
    parent: ScorerConfig | None,
    project_id: int,
    name: str,
    kind: str,
    judge: JudgeConnection | None,
    options: dict[str, Any],
    user: User | None,
) -> ScorerConfig:
    """The next version of a scorer; the one place versions are numbered (an edit of a
    scorer a run used, a saved rescore).

    1. Lock every version of the scorer (named as `parent`, else `name`), so two saves
       at once number theirs one after the other.
    2. Archive the versions still live: only the newest is edited and offered to runs;
       runs keep pointing at the version they ran.
    3. Create version highest + 1 with `options` (already validated) and `parent`.
    """
    lineage = parent.name if parent is not None else name
    versions = ScorerConfig.objects.select_for_update().filter(
        project_id=project_id, name=lineage
    )
    top = max(versions.values_list("version", flat=True), default=0)
    if parent is not None:
        top = max(top, parent.version)
    versions.filter(archived=False).update(archived=True)
    if parent is not None:
        parent.archived = True
    scorer = ScorerConfig.objects.create(
        project_id=project_id,
        name=name,
        kind=kind,
        judge=judge,
        options=options,
        version=top + 1,
        parent=parent,
        created_by=user if user and user.is_authenticated else None,
    )
    _audit(
        scorer,
        user,
        "scorer.version",
        f"saved version {scorer.version} of scorer “{lineage}”",
        before=_settings(parent) if parent is not None else None,
        after=_settings(scorer),
    )
    return scorer


def scorer_version_create_from_run(
    *, run_scorer: RunScorer, options: dict[str, Any], user: User
) -> ScorerConfig:
    """Save a run scorer's new options (a rescore) as the next version of its scorer;
    the run's snapshot (name, kind, judge) stands in for a scorer since deleted."""
    parent = run_scorer.scorer
    return scorer_version_create(
        parent=parent,
        project_id=run_scorer.run.project_id,
        name=parent.name if parent is not None else run_scorer.name,
        kind=run_scorer.kind,
        judge=parent.judge if parent is not None else run_scorer.judge,
        options=options,
        user=user,
    )


def scorer_is_superseded(scorer: ScorerConfig) -> bool:
    """Whether a newer version of the scorer exists (the older one is archived by
    the edit that made it, and cannot be unarchived)."""
    return ScorerConfig.objects.filter(parent_id=scorer.pk).exists()


def scorer_set_archived(
    *, scorer: ScorerConfig, user: User | None, archived: bool
) -> ScorerConfig:
    """Archive (hide from the scorer list and the run form) or unarchive the current
    version of a scorer, audited. Runs keep their snapshot of it."""
    with transaction.atomic(durable=True):
        locked = ScorerConfig.objects.select_for_update().get(pk=scorer.pk)
        if locked.archived != archived:
            if scorer_is_superseded(locked):
                raise ApplicationError(
                    f"“{locked}” is an old version: a newer version of the scorer "
                    "replaced it. Archive or unarchive the newest version instead."
                )
            locked.archived = archived
            locked.save(update_fields=["archived"])
            locked.project = scorer.project
            verb = "archived" if archived else "unarchived"
            _audit(
                locked,
                user,
                "scorer.archive" if archived else "scorer.unarchive",
                f"{verb} scorer “{locked}”",
                before={"archived": not archived},
                after={"archived": archived},
            )
    scorer.archived = archived
    return scorer
