"""The differential suite's part for the agent kinds (scoring.kinds.agent and
scoring.trajectory): rubric, multi_turn_judge, tool_call_accuracy_llm,
trajectory_accuracy_llm (through the scripted judge) and trajectory (code).

Cases (``make_case``), the scripted judge's answers for both sides (``answer``: ours in
our steps' shapes, Mastra's in its schemas' shapes) and the explanation of a difference
(``explain``), which reproduces the reference's number from our own pieces with one
documented rule switched to Mastra's.
"""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING, Any

from conformance.cases import _TOOLS, Case, _scale, _text
from scoring import validate_options
from scoring.trajectory import tool_failures, trajectory

if TYPE_CHECKING:
    from conformance.run import Outcome

__all__ = ["AGENT_KINDS", "AGENT_ROWS", "answer", "explain", "make_case"]

AGENT_KINDS = (
    "rubric",
    "multi_turn_judge",
    "tool_call_accuracy_llm",
    "trajectory_accuracy_llm",
    "trajectory",
)
AGENT_ROWS = ("rubric-required-from-judge", "trajectory-nothing-to-check")


def _reason(index: int) -> str:
    return f"scripted reason {index}"


def _same_json_text(a: Any, b: Any) -> bool:
    """Mastra's comparison: ``JSON.stringify(a) === JSON.stringify(b)``."""
    return json.dumps(a, separators=(",", ":"), ensure_ascii=False) == json.dumps(
        b, separators=(",", ":"), ensure_ascii=False
    )


# ------------------------------------------------------------------------- cases


def _rubric(rng: random.Random, index: int) -> Case:
    rows: set[str] = set()
    n = rng.randint(1, 6)
    descriptions = [
        f"criterion {i}: " + _text(rng, flavour="plain", sentences=1) for i in range(n)
    ]
    roll = rng.random()
    if roll < 0.3:
        required = [True] * n
    elif roll < 0.4:
        required = [False] * n
    else:
        required = [rng.random() < 0.6 for _ in range(n)]
    verdicts = [rng.random() < 0.7 for _ in range(n)]
    judge_required = list(required)
    if rng.random() < 0.08:  # the judge misreports a criterion's designation to Mastra
        i = rng.randrange(n)
        judge_required[i] = not judge_required[i]
        rows.add("rubric-required-from-judge")
    scale = _scale(rng)
    criteria = [
        {"description": d, "required": r}
        for d, r in zip(descriptions, required, strict=True)
    ]
    options: dict[str, Any] = {"scale": scale, "criteria": criteria}
    if all(required) and rng.random() < 0.3:  # the text form: one required per line
        options["criteria"] = "\n".join(f"- {d}" for d in descriptions)
    validate_options("rubric", options)
    item = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain"),
    }
    return Case(
        id=f"rubric-{index:04d}",
        kind="rubric",
        item=item,
        options=options,
        theirs={
            "scorer": "rubric",
            "input": item["input"],
            "output": item["output"],
            "criteria": criteria,
            "options": {"scale": scale},
        },
        script={
            "kind": "rubric",
            "descriptions": descriptions,
            "verdicts": verdicts,
            "judge_required": judge_required,
        },
        rows=sorted(rows),
    )


def _multi_turn(rng: random.Random, index: int) -> Case:
    turns = rng.randint(1, 5)
    conversation: list[dict[str, str]] = []
    for _ in range(turns):
        conversation.append(
            {"role": "user", "content": _text(rng, flavour="plain", sentences=1)}
        )
        reply = _text(rng, flavour="plain")
        if rng.random() < 0.1:
            reply = rng.choice(["", "  "])  # a turn that only called tools
        conversation.append({"role": "assistant", "content": reply})
    output = conversation[-1]["content"]
    if not output.strip():
        output = _text(rng, flavour="plain")
        conversation[-1]["content"] = output
    item = {
        "input": conversation[0]["content"],
        "output": output,
        "conversation": conversation,
    }
    scale = _scale(rng)
    criterion = "The assistant " + _text(rng, flavour="plain", sentences=1)
    assistant = [m["content"].strip() for m in conversation if m["role"] == "assistant"]
    return Case(
        id=f"multi_turn_judge-{index:04d}",
        kind="multi_turn_judge",
        item=item,
        options={"scale": scale, "criterion": criterion},
        theirs={
            "scorer": "multi_turn_judge",
            "turns": [t for t in assistant if t],
            "criterion": criterion,
            "options": {"scale": scale},
        },
        script={"kind": "multi_turn_judge", "satisfied": rng.random() < 0.5},
    )


def _calls(rng: random.Random, pool: list[str], n: int) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for i in range(n):
        if calls and rng.random() < 0.15:  # the same call again
            calls.append(dict(calls[-1]))
            continue
        calls.append(
            {
                "name": rng.choice(pool),
                "arguments": {"q": f"query {i}", "limit": rng.randint(1, 3)},
                "result": f"r{i}",
            }
        )
    return calls


def _tool_llm(rng: random.Random, index: int) -> Case:
    pool = _TOOLS[: rng.randint(2, len(_TOOLS))]
    calls = _calls(rng, pool, rng.choice([0, 0, 1, 1, 2, 3, 4, 5]))
    evaluations = [(c["name"], rng.random() < 0.7) for c in calls]
    if calls and rng.random() < 0.1:  # the judge skips a call or adds one
        evaluations = (
            evaluations[:-1] if rng.random() < 0.5 else evaluations + [("extra", False)]
        )
    missing = [rng.choice(pool) for _ in range(rng.choice([0, 0, 0, 1, 2]))]
    item = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain", sentences=1),
        "tool_calls": calls,
    }
    tools = [{"name": name, "description": f"does {name}"} for name in pool]
    return Case(
        id=f"tool_call_accuracy_llm-{index:04d}",
        kind="tool_call_accuracy_llm",
        item=item,
        # Mastra's scorer has no scale: compared at scale 1
        options={"available_tools": tools},
        theirs={
            "scorer": "tool_call_accuracy_llm",
            "input": item["input"],
            "output": item["output"],
            "tool_calls": [c["name"] for c in calls],
            "available_tools": [
                {"id": t["name"], "description": t["description"]} for t in tools
            ],
        },
        script={
            "kind": "tool_call_accuracy_llm",
            "evaluations": evaluations,
            "missing": missing,
        },
    )


def _their_step(step: dict[str, Any], typed: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"name": step["name"]}
    if typed:
        out["stepType"] = "tool_call"
    if "arguments" in step:
        out["toolArgs"] = step["arguments"]
    if "result" in step:
        out["toolResult"] = step["result"]
    if "success" in step:
        out["success"] = step["success"]
    return out


def _trajectory_llm(rng: random.Random, index: int) -> Case:
    pool = _TOOLS[: rng.randint(2, len(_TOOLS))]
    calls = _calls(rng, pool, rng.choice([0, 1, 2, 3, 4, 5]))
    steps = [(c["name"], rng.random() < 0.75, rng.random() < 0.75) for c in calls]
    missing = [rng.choice(pool) for _ in range(rng.choice([0, 0, 0, 1, 2]))]
    extra = [s[0] for s in steps if not s[1]][: rng.randint(0, 2)]
    if not calls and rng.random() < 0.4:
        extra = [rng.choice(pool)]
    item: dict[str, Any] = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain", sentences=1),
        "tool_calls": calls,
    }
    expected: list[dict[str, Any]] | None = None
    roll = rng.random()
    if roll < 0.4:
        expected = [{"name": rng.choice(pool)} for _ in range(rng.randint(1, 4))]
        item["expected_trajectory"] = expected
    elif roll < 0.6:
        expected = [{"name": rng.choice(pool)} for _ in range(rng.randint(1, 3))]
        item["expected_tool_calls"] = expected
    theirs: dict[str, Any] = {
        "scorer": "trajectory_accuracy_llm",
        "input": item["input"],
        "output": item["output"],
        "steps": [_their_step(c) for c in calls],
    }
    if expected is not None:
        theirs["expected"] = [_their_step(s) for s in expected]
    return Case(
        id=f"trajectory_accuracy_llm-{index:04d}",
        kind="trajectory_accuracy_llm",
        item=item,
        options={},  # Mastra's scorer has no scale: compared at scale 1
        theirs=theirs,
        script={
            "kind": "trajectory_accuracy_llm",
            "steps": steps,
            "missing": missing,
            "extra": extra,
        },
    )


def _trajectory(rng: random.Random, index: int) -> Case:
    rows: set[str] = set()
    pool = _TOOLS[: rng.randint(2, len(_TOOLS))]
    calls = _calls(rng, pool, rng.choice([0, 1, 2, 3, 3, 4, 5, 6, 8]))
    failing = rng.random() < 0.4
    for call in calls:
        if failing and rng.random() < 0.5:
            call["success"] = rng.random() < 0.3
    if failing and calls and rng.random() < 0.5:  # a tool retried after failures
        name = rng.choice(pool)
        at = rng.randrange(len(calls) + 1)
        retries = [
            {"name": name, "arguments": {"q": f"retry {k}"}, "success": False}
            for k in range(rng.randint(1, 5))
        ]
        if rng.random() < 0.6:
            retries.append({"name": name, "arguments": {"q": "last"}, "success": True})
        calls[at:at] = retries
    if len(calls) > 1 and rng.random() < 0.1:  # a repeat with its keys in another order
        previous = calls[-1]
        if "arguments" in previous and len(previous["arguments"]) > 1:
            again = dict(previous)
            again["arguments"] = dict(reversed(list(previous["arguments"].items())))
            calls.append(again)
            rows.add("trajectory-json-key-order")
    item: dict[str, Any] = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain", sentences=1),
        "tool_calls": calls,
    }
    options: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    roll = rng.random()
    expected: list[dict[str, Any]] | None = None
    if roll < 0.75:
        if calls and rng.random() < 0.6:
            expected = [
                {k: v for k, v in c.items() if k in ("name", "arguments", "result")}
                for c in calls
                if rng.random() < 0.8
            ]
            for step in expected:
                if "arguments" in step and rng.random() < 0.5:
                    del step["arguments"]
                elif "arguments" in step and rng.random() < 0.15:
                    step["arguments"] = dict(reversed(list(step["arguments"].items())))
                    rows.add("trajectory-json-key-order")
                if "result" in step and rng.random() < 0.7:
                    del step["result"]
            if rng.random() < 0.3:
                rng.shuffle(expected)
        else:
            expected = [
                {"name": rng.choice(pool)} for _ in range(rng.choice([0, 1, 2, 3, 4]))
            ]
        where = rng.random()
        if where < 0.25 and expected and all(len(s) == 1 for s in expected):
            options["expected_tool_order"] = [s["name"] for s in expected]
        elif where < 0.6:
            item["expected_trajectory"] = expected
        else:
            item["expected_tool_calls"] = expected
        defaults["steps"] = [_their_step(s, len(s) > 1) for s in expected]
    if rng.random() < 0.5:
        options["ordering"] = defaults["ordering"] = rng.choice(
            ["relaxed", "strict", "unordered"]
        )
    if rng.random() < 0.3:
        options["allow_repeated_steps"] = defaults["allowRepeatedSteps"] = (
            rng.random() < 0.5
        )
    if rng.random() < 0.4:
        options["max_steps"] = defaults["maxSteps"] = rng.choice([0, 1, 2, 3, 4, 6, 10])
    if rng.random() < 0.4:
        options["no_redundant_calls"] = defaults["noRedundantCalls"] = (
            rng.random() < 0.6
        )
    if rng.random() < 0.3:
        options["blacklisted_tools"] = defaults["blacklistedTools"] = [
            rng.choice(_TOOLS) for _ in range(rng.randint(1, 2))
        ]
    if rng.random() < 0.2:
        options["blacklisted_sequences"] = defaults["blacklistedSequences"] = [
            [rng.choice(pool) for _ in range(rng.randint(1, 3))]
            for _ in range(rng.randint(1, 2))
        ]
    if rng.random() < 0.3:
        options["max_retries_per_tool"] = defaults["maxRetriesPerTool"] = rng.randint(
            0, 4
        )
    weights: dict[str, float] = {}
    if rng.random() < 0.3:
        names = {
            "accuracy": "accuracy",
            "efficiency": "efficiency",
            "tool_failures": "toolFailures",
            "blacklist": "blacklist",
        }
        chosen = {
            k: rng.choice([0, 0.1, 0.25, 0.5, 1, 2])
            for k in names
            if rng.random() < 0.5
        }
        options["weights"] = chosen
        weights = {names[k]: v for k, v in chosen.items()}
    nothing = (
        expected is None
        and "max_steps" not in options
        and "no_redundant_calls" not in options
        and not options.get("blacklisted_tools")
        and not options.get("blacklisted_sequences")
    )
    if nothing:
        rows.add("trajectory-nothing-to-check")
    if rng.random() < 0.15:
        options["scale"] = rng.choice([10, 5, 100])
    validate_options("trajectory", options)
    return Case(
        id=f"trajectory-{index:04d}",
        kind="trajectory",
        item=item,
        options=options,
        theirs={
            "scorer": "trajectory",
            "input": item["input"],
            "output": item["output"],
            "steps": [_their_step(c) for c in calls],
            "options": {"defaults": defaults, "weights": weights},
        },
        rows=sorted(rows),
    )


_MAKERS = {
    "rubric": _rubric,
    "multi_turn_judge": _multi_turn,
    "tool_call_accuracy_llm": _tool_llm,
    "trajectory_accuracy_llm": _trajectory_llm,
    "trajectory": _trajectory,
}


def make_case(kind: str, rng: random.Random, index: int) -> Case:
    return _MAKERS[kind](rng, index)


# ---------------------------------------------------------------- scripted judge


def answer(side: str, script: dict[str, Any], step: str, properties: set[str]) -> str:
    """The scripted reply of one step, shaped for ``side`` ("ours" or "mastra")."""
    kind = script["kind"]
    if side == "ours":
        return json.dumps(_ours(script, step))
    if not properties:  # Mastra's reason steps
        return "Scripted explanation of the score."
    if kind == "rubric":
        return json.dumps(
            {
                "criteria": [
                    {
                        "criterion": text,
                        "satisfied": met,
                        "required": required,
                        "reasoning": _reason(i),
                    }
                    for i, (text, met, required) in enumerate(
                        zip(
                            script["descriptions"],
                            script["verdicts"],
                            script["judge_required"],
                            strict=True,
                        )
                    )
                ],
                "overallAssessment": "scripted",
            }
        )
    if kind == "multi_turn_judge":
        return json.dumps({"satisfied": script["satisfied"], "reasoning": "scripted"})
    if kind == "tool_call_accuracy_llm":
        return json.dumps(
            {
                "evaluations": [
                    {"toolCalled": tool, "wasAppropriate": ok, "reasoning": _reason(i)}
                    for i, (tool, ok) in enumerate(script["evaluations"])
                ],
                "missingTools": list(script["missing"]),
            }
        )
    if kind == "trajectory_accuracy_llm":
        return json.dumps(
            {
                "stepEvaluations": [
                    {
                        "stepName": name,
                        "wasNecessary": necessary,
                        "wasInOrder": in_order,
                        "reasoning": _reason(i),
                    }
                    for i, (name, necessary, in_order) in enumerate(script["steps"])
                ],
                "missingSteps": list(script["missing"]),
                "extraSteps": list(script["extra"]),
                "overallAssessment": "scripted",
            }
        )
    raise KeyError(f"{kind}: no scripted answer for Mastra's step {properties}")


def _ours(script: dict[str, Any], step: str) -> dict[str, Any]:
    kind = script["kind"]
    if (kind, step) == ("rubric", "criteria"):
        return {
            "criteria": [
                {"number": i + 1, "satisfied": met, "reason": _reason(i)}
                for i, met in enumerate(script["verdicts"])
            ],
            "overall_assessment": "scripted",
        }
    if (kind, step) == ("multi_turn_judge", "conversation_verdict"):
        return {"satisfied": script["satisfied"], "reason": "scripted"}
    if (kind, step) == ("tool_call_accuracy_llm", "tool_evaluations"):
        return {
            "evaluations": [
                {"tool": tool, "appropriate": ok, "reason": _reason(i)}
                for i, (tool, ok) in enumerate(script["evaluations"])
            ],
            "missing_tools": list(script["missing"]),
            "overall_assessment": "scripted",
        }
    if (kind, step) == ("trajectory_accuracy_llm", "trajectory_steps"):
        return {
            "steps": [
                {"name": name, "necessary": n, "in_order": o, "reason": _reason(i)}
                for i, (name, n, o) in enumerate(script["steps"])
            ],
            "missing_steps": list(script["missing"]),
            "extra_steps": list(script["extra"]),
            "overall_assessment": "scripted",
        }
    raise KeyError(f"{kind}: no scripted answer for our step {step!r}")


# ------------------------------------------------------------------- explanations


def _theirs(outcome: Outcome) -> float | None:
    value = outcome.theirs.score
    return float(value) if isinstance(value, int | float) else None


def explain(outcome: Outcome) -> tuple[list[str], str]:
    """The documented rows that reproduce Mastra's number for this case (none: an
    undocumented difference), and a note."""
    case = outcome.case
    theirs = _theirs(outcome)
    if theirs is None:
        return [], f"theirs failed: {outcome.theirs.error}"
    options = validate_options(case.kind, case.options)
    scale = float(options["scale"])
    if case.kind == "rubric" and "rubric-required-from-judge" in case.rows:
        script = case.script or {}
        analysis = {
            "criteria": [
                {"required": r, "satisfied": s}
                for r, s in zip(
                    script["judge_required"], script["verdicts"], strict=True
                )
            ]
        }
        from scoring.kinds.agent import score_rubric

        if score_rubric(analysis, options) == theirs:
            return ["rubric-required-from-judge"], ""
    if case.kind == "trajectory":
        if "trajectory-nothing-to-check" in case.rows and outcome.ours.error:
            failures = tool_failures(
                trajectory_calls(case.item), options["max_retries_per_tool"]
            )
            expected = failures["score"] if failures["patterns"] else 1.0
            if expected == theirs:
                return ["trajectory-nothing-to-check"], ""
        if "trajectory-json-key-order" in case.rows and outcome.ours.error is None:
            ratio = trajectory(case.item, options, same=_same_json_text)["ratio"]
            if ratio * scale == theirs * scale:
                return ["trajectory-json-key-order"], ""
    return [], "no documented row reproduces their number"


def trajectory_calls(item: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(c) for c in item.get("tool_calls") or []]
