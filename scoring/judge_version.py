"""The identity of a judge: what made a judged result what it is.

``judge_spec`` collects everything that changes a judge's answers: the kind, the digests
of its prompt templates and reply schemas, the rubric and few-shot examples, the model
and the call parameters (temperature), the options that reach the prompt (those that
only feed the score formula, such as scale and threshold, are left out: they are
re-scored without a judge call), ``repeat``, and the scoring library's version.
``judge_digest`` is the sha256 of its canonical JSON: two results with the same digest
came from the same judge. ``judge_label`` is the readable name
("faithfulness v3 · gpt-4o-mini · 2 examples"); the version number is given by whoever
stores the versions (one sequence per project and kind).
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from scoring import judge_options, prompts
from scoring.judge_options import effective_judge
from scoring.options import validate_options
from scoring.prompts import strict_schema
from scoring.registry import KIND_DEFS, KINDS

__all__ = [
    "SCORE_ONLY_OPTIONS",
    "SCORING_VERSION",
    "judge_digest",
    "judge_label",
    "judge_spec",
    "template_digest",
]

# Options that only feed the score formula (what-if re-scoring changes them with no judge
# call), so they do not make another judge.
SCORE_ONLY_OPTIONS = frozenset(
    {"scale", "threshold", "penalties", "uncertainty_weight", "category_scores"}
)
# Options recorded in the spec in their own right (the effective model and temperature).
_OWN_KEYS = frozenset(
    {"rubric", "examples", "repeat", "judge_model", "judge_temperature"}
)


def _library_version() -> str:
    try:
        return metadata.version("evalsite")
    except metadata.PackageNotFoundError:
        return "0"


SCORING_VERSION = _library_version()


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _module_templates(module_name: str) -> dict[str, str]:
    # A kind's prompt templates are its module's upper-case string constants.
    module = sys.modules[module_name]
    return {
        name: value
        for name, value in sorted(vars(module).items())
        if name.isupper() and isinstance(value, str)
    }


@functools.cache
def template_digest(kind: str) -> str:
    """sha256 of the kind's prompt templates, its steps' reply schemas and the shared
    prompt text (data rules, reason task, the judge options' wording)."""
    kind_def = next(k for k in KIND_DEFS if k.name == kind)
    templates = {
        "kind": _module_templates(kind_def.options.__module__),
        "shared": _module_templates(prompts.__name__),
        "judge_options": _module_templates(judge_options.__name__),
        "steps": [
            {"name": step.name, "schema": strict_schema(step.reply_model)}
            for step in prompts.STEPS.get(kind, ())
        ],
        "role": prompts.ROLE.get(kind, ""),
        "meaning": prompts.MEANING.get(kind, ""),
        "reason_items": prompts.REASON_ITEMS.get(kind, ""),
    }
    return _digest(templates)


def judge_spec(
    kind: str,
    options: Mapping[str, Any] | None,
    model: str,
    params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything that identifies the judge of ``kind`` with ``options`` on ``model``
    called with ``params`` (e.g. ``{"temperature": 0.0}``); the options' judge_model and
    judge_temperature, when set, replace ``model`` and the temperature. Raises
    OptionsError / UnknownKindError for bad options or kind."""
    opts = validate_options(kind, dict(options) if options else None)
    call_params = dict(params or {})
    effective_model, temperature = effective_judge(
        opts, model, float(call_params.get("temperature", 0.0) or 0.0)
    )
    call_params["temperature"] = temperature
    prompt_options = {
        key: value
        for key, value in opts.items()
        if key not in SCORE_ONLY_OPTIONS and key not in _OWN_KEYS
    }
    return {
        "kind": kind,
        "templates": template_digest(kind),
        "rubric": opts.get("rubric"),
        "examples": list(opts.get("examples") or []),
        "model": effective_model if KINDS[kind].needs_judge else "",
        "params": call_params if KINDS[kind].needs_judge else {},
        "options": prompt_options,
        "repeat": int(opts.get("repeat") or 1),
        "scoring_version": SCORING_VERSION,
    }


def judge_digest(spec: Mapping[str, Any]) -> str:
    """sha256 (hex) of the spec's canonical JSON (sorted keys, no spaces)."""
    return _digest(dict(spec))


def judge_label(spec: Mapping[str, Any], number: int) -> str:
    """ "faithfulness v3 · gpt-4o-mini · 2 examples" (plus "rubric" and "asked 3×" when
    the judge has them)."""
    parts = [f"{spec['kind']} v{number}"]
    if spec.get("model"):
        parts.append(str(spec["model"]))
    temperature = (spec.get("params") or {}).get("temperature")
    if temperature:
        parts.append(f"t={temperature:g}")
    examples = len(spec.get("examples") or [])
    if examples:
        parts.append(f"{examples} example{'s' if examples != 1 else ''}")
    if spec.get("rubric"):
        parts.append("rubric")
    repeat = int(spec.get("repeat") or 1)
    if repeat > 1:
        parts.append(f"asked {repeat}×")
    return " · ".join(parts)
