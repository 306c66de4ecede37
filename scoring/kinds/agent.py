"""The agent kinds judged by an LLM: rubric (Mastra ``createRubricScorer``),
multi_turn_judge (``createMultiTurnJudgeScorer``), tool_call_accuracy_llm
(``createToolCallAccuracyScorerLLM``) and trajectory_accuracy_llm
(``createTrajectoryAccuracyScorerLLM``), @mastra/evals 1.10.2: their judge steps and
prompts, analysis models, options, formulas (scoring/SCORERS.md) and registry entries.

Each kind has one step; its reply is checked against the item (one verdict per criterion,
by number) and assembled into the analysis. The item's data travels in the same kind of
neutralised data blocks as every other prompt (``scoring.prompts``), with tags of its own
(``<turn>``, ``<tool_call>``, ``<criterion>``...). Our prompts are our own: they show the
judge more than Mastra's do (the user's turns and the system prompt beside the
assistant's, a call's arguments and result); the numbers depend only on the verdicts.

The item's agent data uses the keys of ``scoring.toolcalls``: ``conversation`` (messages
``{"role", "content"}``), ``tool_calls`` (``{"name", "arguments"?, "result"?}``),
``expected_trajectory`` / ``expected_tool_calls`` (calls or plain names) and
``system_prompt``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, Protocol

from pydantic import BeforeValidator, Field

from scoring.client import Plan
from scoring.errors import CaseError, JudgeError
from scoring.kinds.base import (
    AnalysisModel,
    CommonOptions,
    KindDef,
    OptionsModel,
    ScoreFunction,
    round_half_up,
)
from scoring.kinds.toolcalls import ToolName, name_list
from scoring.prompts import (
    TAG_OPENERS,
    Flag,
    Messages,
    Reply,
    Step,
    _system,
    attribute,
    neutralise,
)
from scoring.toolcalls import _steps, expected_field, tool_names

__all__ = [
    "AGENT_STEPS",
    "agent_analyse",
    "agent_first_messages",
    "assistant_turns",
    "validate_agent_case",
]

AGENT_TAGS = (
    "turn",
    "tool_call",
    "expected_step",
    "criterion",
    "system_prompt",
    "available_tools",
    "criterion_text",
)
_AGENT_TAG_RE = re.compile(
    r"[" + TAG_OPENERS + r"](\s*/?\s*)(" + "|".join(AGENT_TAGS) + r")\b", re.I
)


def agent_neutralise(text: str) -> str:
    """``scoring.prompts.neutralise`` for our tags and the agent tags alike."""
    return neutralise(
        _AGENT_TAG_RE.sub(lambda m: "&lt;" + m.group(1) + m.group(2), text)
    )


def agent_block(tag: str, text: str, index: int | None = None, **attrs: str) -> str:
    # An attribute may carry the item's data (a conversation turn's role).
    extra = "".join(f' {k}="{attribute(v)}"' for k, v in attrs.items())
    at = f' index="{index}"' if index is not None else ""
    return f"<{tag}{at}{extra}>\n{agent_neutralise(text)}\n</{tag}>"


# --------------------------------------------------------------------------- replies


class CriterionReply(Reply):
    number: int = Field(ge=1)
    satisfied: Flag
    reason: str


class RubricReply(Reply):
    criteria: list[CriterionReply]
    overall_assessment: str


class ConversationVerdictReply(Reply):
    satisfied: Flag
    reason: str


class ToolEvaluationReply(Reply):
    tool: str
    appropriate: Flag
    reason: str


class ToolEvaluationsReply(Reply):
    evaluations: list[ToolEvaluationReply]
    missing_tools: list[str]
    overall_assessment: str


class StepEvaluationReply(Reply):
    name: str
    necessary: Flag
    in_order: Flag
    reason: str


class TrajectoryStepsReply(Reply):
    steps: list[StepEvaluationReply]
    missing_steps: list[str]
    extra_steps: list[str]
    overall_assessment: str


AGENT_STEPS: dict[str, tuple[Step, ...]] = {
    "rubric": (Step("rubric", "criteria", RubricReply),),
    "multi_turn_judge": (
        Step("multi_turn_judge", "conversation_verdict", ConversationVerdictReply),
    ),
    "tool_call_accuracy_llm": (
        Step("tool_call_accuracy_llm", "tool_evaluations", ToolEvaluationsReply),
    ),
    "trajectory_accuracy_llm": (
        Step("trajectory_accuracy_llm", "trajectory_steps", TrajectoryStepsReply),
    ),
}

# --------------------------------------------------------------------------- prompt text

ROLE = {
    "rubric": "You are an exacting grader checking an agent's output against a rubric of criteria.",
    "multi_turn_judge": "You are an exacting grader judging a whole multi-turn conversation against one criterion.",
    "tool_call_accuracy_llm": "You are an evaluator of an AI agent's choice of tools.",
    "trajectory_accuracy_llm": "You are an evaluator of the sequence of actions an AI agent took.",
}

RUBRIC_TASK = """\
Decide, for every numbered <criterion>, whether the agent's output in <output> satisfies \
it, given the task in <input>. Judge each criterion on its own, from what the output \
actually contains: a criterion is satisfied only when the output clearly and fully meets \
it; when in doubt it is not satisfied. Effort, intent and partial progress do not count. \
Whether a criterion is required or optional does not change how you judge it.
Return exactly one entry per criterion, with its number. The reason is one sentence \
saying what is present or missing; overall_assessment sums up in one or two sentences."""

MULTI_TURN_TASK = """\
Decide whether the conversation, taken as a whole, satisfies the criterion in \
<criterion_text>. The conversation is given turn by turn in <turn> blocks (the user's \
turns for context, the assistant's turns as the evidence); evidence may be spread over \
several assistant turns. Satisfied only when the assistant's turns clearly and fully meet \
the criterion; when in doubt, not satisfied. Do not assume anything the assistant did not \
say. The reason is one or two sentences naming the turns (by number) that decided it."""

TOOL_TASK = """\
Decide whether each tool call the agent made (the <tool_call> blocks, in order) was \
appropriate for the user's request in <input>, given the agent's reply in <output> and \
the tools it could use (<available_tools>). A call is appropriate only when it directly \
serves what the user explicitly asked for; a call that is merely related or helpful but \
not asked for is not appropriate. missing_tools lists tools the agent should have called \
for the request but did not (an empty list when none). When the agent called no tool, \
return no evaluations, and list the tools it needed in missing_tools (none when asking \
the user for missing details was the right choice).
Return one evaluation per call, in order, naming its tool. The reason is one sentence; \
overall_assessment sums up in one sentence."""

TRAJECTORY_TASK = """\
Assess the sequence of tool calls the agent made (the <tool_call> blocks, in order) to \
fulfil the request in <input>, given its final reply in <output>. When expected steps are \
given (<expected_step> blocks), compare with them: the expected order is a guideline for \
logical dependencies, not an absolute rule. Without them, judge from the task: \
completeness, efficiency, ordering and appropriateness.
For every call: necessary (was the step needed for the task; a redundant repeat is not) \
and in_order (was it in a logical position in the sequence). missing_steps: steps that \
should have been taken but were not; extra_steps: unnecessary or redundant steps. Empty \
lists when there are none.
Return one entry per call, in order, naming its tool. The reason is one sentence; \
overall_assessment sums up in one sentence."""

ANSWERS = {
    "rubric": '{"criteria": [{"number": <int, from 1>, "satisfied": true | false, "reason": "<one sentence>"}, ...], "overall_assessment": "<one or two sentences>"}',
    "multi_turn_judge": '{"satisfied": true | false, "reason": "<one or two sentences>"}',
    "tool_call_accuracy_llm": '{"evaluations": [{"tool": "<tool name>", "appropriate": true | false, "reason": "<one sentence>"}, ...], "missing_tools": ["<tool name>", ...], "overall_assessment": "<one sentence>"}',
    "trajectory_accuracy_llm": '{"steps": [{"name": "<tool name>", "necessary": true | false, "in_order": true | false, "reason": "<one sentence>"}, ...], "missing_steps": ["<step>", ...], "extra_steps": ["<step>", ...], "overall_assessment": "<one sentence>"}',
}

_TASKS = {
    "rubric": RUBRIC_TASK,
    "multi_turn_judge": MULTI_TURN_TASK,
    "tool_call_accuracy_llm": TOOL_TASK,
    "trajectory_accuracy_llm": TRAJECTORY_TASK,
}

# --------------------------------------------------------------------------- case data


def _text(case: Mapping[str, Any], field: str) -> str:
    value = case.get(field)
    return value if isinstance(value, str) else ""


def conversation(case: Mapping[str, Any]) -> list[dict[str, str]]:
    """The item's messages ``{"role", "content"}``, checked; the item's ``output`` is
    the last assistant turn when the conversation does not already end with it."""
    value = case.get("conversation")
    messages: list[dict[str, str]] = []
    if value is not None:
        if not isinstance(value, list | tuple):
            raise CaseError(
                f"the item's conversation must be a list of messages, got {type(value).__name__}",
                field="conversation",
            )
        for i, message in enumerate(value):
            role = message.get("role") if isinstance(message, Mapping) else None
            content = message.get("content") if isinstance(message, Mapping) else None
            if not isinstance(role, str) or not role.strip():
                raise CaseError(
                    f"conversation[{i}] needs a role (user, assistant...)",
                    field=f"conversation[{i}].role",
                )
            if content is None:
                content = ""
            if not isinstance(content, str):
                raise CaseError(
                    f"conversation[{i}]'s content must be text, not {type(content).__name__}",
                    field=f"conversation[{i}].content",
                )
            messages.append({"role": role.strip().lower(), "content": content})
    output = _text(case, "output")
    if output.strip():
        last = next((m for m in reversed(messages) if m["role"] == "assistant"), None)
        if (
            last is None
            or messages[-1] is not last
            or last["content"].strip() != output.strip()
        ):
            messages.append({"role": "assistant", "content": output})
    return messages


def assistant_turns(case: Mapping[str, Any]) -> list[str]:
    """The assistant's non-blank turns, trimmed, in order (what Mastra grades)."""
    return [
        m["content"].strip()
        for m in conversation(case)
        if m["role"] == "assistant" and m["content"].strip()
    ]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _call_text(step: Mapping[str, Any]) -> str:
    lines = [f"tool: {step['name']}"]
    if "arguments" in step:
        lines.append(f"arguments: {_json(step['arguments'])}")
    if "result" in step:
        result = step["result"]
        lines.append(
            f"result: {result if isinstance(result, str) else _json(result)}"[:2000]
        )
    return "\n".join(lines)


def _calls_blocks(case: Mapping[str, Any]) -> str:
    calls = _steps(case, "tool_calls") or []
    if not calls:
        return "(the agent called no tool)"
    return "\n".join(
        agent_block("tool_call", _call_text(c), i) for i, c in enumerate(calls)
    )


def expected_steps(
    case: Mapping[str, Any], options: Mapping[str, Any]
) -> list[dict[str, Any]] | None:
    order = options.get("expected_tool_order")
    if order:
        return [{"name": name} for name in order]
    field = expected_field(case, "expected_trajectory")
    return None if field is None else _steps(case, field) or []


def _input_block(case: Mapping[str, Any]) -> str:
    text = _text(case, "input")
    return (
        agent_block("input", text)
        if text.strip()
        else "<input>\n(no input given)\n</input>"
    )


def _system_block(case: Mapping[str, Any]) -> str:
    text = _text(case, "system_prompt")
    if not text.strip():
        return ""
    return agent_block("system_prompt", text) + "\n\n"


def agent_first_messages(
    kind: str, case: Mapping[str, Any], options: Mapping[str, Any]
) -> Messages:
    """The messages of the kind's only step."""
    step = AGENT_STEPS[kind][0].name
    if kind == "rubric":
        criteria = "\n".join(
            agent_block(
                "criterion",
                c["description"],
                i + 1,
                kind="required" if c["required"] else "optional",
            )
            for i, c in enumerate(options["criteria"])
        )
        user = (
            f"{_input_block(case)}\n\n{agent_block('output', _text(case, 'output'))}\n\n"
            f"{criteria}\n\nJudge every criterion."
        )
    elif kind == "multi_turn_judge":
        turns = conversation(case)
        transcript = (
            "\n".join(
                agent_block("turn", m["content"], i + 1, role=m["role"])
                for i, m in enumerate(turns)
            )
            or "(no messages)"
        )
        user = (
            f"{agent_block('criterion_text', str(options['criterion']))}\n\n"
            f"{_system_block(case)}{transcript}\n\n"
            "Does the conversation satisfy the criterion?"
        )
    elif kind == "tool_call_accuracy_llm":
        tools = options.get("available_tools") or []
        listed = "\n".join(
            f"{t['name']}: {t.get('description') or '(no description)'}" for t in tools
        )
        user = (
            f"{_system_block(case)}{_input_block(case)}\n\n"
            f"{agent_block('output', _text(case, 'output'))}\n\n{_calls_blocks(case)}\n\n"
            f"{agent_block('available_tools', listed or '(not listed)')}\n\n"
            "Judge every tool call."
        )
    elif kind == "trajectory_accuracy_llm":
        expected = expected_steps(case, options)
        wanted = (
            "\n".join(
                agent_block("expected_step", _call_text(s), i)
                for i, s in enumerate(expected)
            )
            if expected
            else "(no expected trajectory: judge from the task)"
        )
        user = (
            f"{_input_block(case)}\n\n{agent_block('output', _text(case, 'output'))}\n\n"
            f"{_calls_blocks(case)}\n\n{wanted}\n\nAssess every step."
        )
    else:
        raise KeyError(f"no judge prompts for kind {kind!r}")
    system = _system(ROLE[kind], _TASKS[kind], ANSWERS[kind], f"{kind}__{step}")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# --------------------------------------------------------------------------- checks


def validate_agent_case(kind: str, case: Mapping[str, Any]) -> None:
    """CaseError (naming the field) when the item lacks what ``kind`` needs."""
    if kind == "multi_turn_judge":
        if not assistant_turns(case):
            raise CaseError(
                "multi_turn_judge needs a conversation with at least one assistant turn "
                "(or an output)",
                field="conversation",
            )
        return
    if kind in ("tool_call_accuracy_llm", "trajectory_accuracy_llm"):
        tool_names(case, "tool_calls", required=True)
        for field in ("expected_trajectory", "expected_tool_calls"):
            tool_names(case, field, required=False)
        if kind == "tool_call_accuracy_llm" and not _text(case, "input").strip():
            raise CaseError(
                "tool_call_accuracy_llm needs a non-empty input (the request)",
                field="input",
            )
        return
    if kind == "rubric" and not _text(case, "output").strip():
        raise CaseError("rubric needs a non-empty output", field="output")


# --------------------------------------------------------------------------- analysis


class _Runner(Protocol):
    kind: str

    def step(self, name: str, messages: Messages) -> Plan[Reply]: ...

    @property
    def steps(self) -> list[Any]: ...


def _fail(run: _Runner, message: str) -> JudgeError:
    record = run.steps[-1]
    record.error = message
    return JudgeError(f"{run.kind}: {message}", raw=record.raw, steps=run.steps)


def _rubric(
    run: _Runner, reply: RubricReply, options: Mapping[str, Any]
) -> dict[str, Any]:
    criteria = list(options["criteria"])
    by_number: dict[int, CriterionReply] = {}
    for entry in reply.criteria:
        if entry.number > len(criteria) or entry.number in by_number:
            raise _fail(
                run,
                f"criterion number {entry.number} is out of range or repeated "
                f"(the rubric has {len(criteria)} criteria)",
            )
        by_number[entry.number] = entry
    missing = [n for n in range(1, len(criteria) + 1) if n not in by_number]
    if missing:
        raise _fail(run, f"the judge gave no verdict for criterion {missing[0]}")
    return {
        "criteria": [
            {
                "criterion": c["description"],
                "required": c["required"],
                "satisfied": by_number[n].satisfied,
                "reason": by_number[n].reason,
            }
            for n, c in enumerate(criteria, 1)
        ],
        "reason": reply.overall_assessment,
    }


def agent_analyse(
    run: _Runner, case: Mapping[str, Any], options: Mapping[str, Any]
) -> Plan[dict[str, Any]]:
    """Run the kind's step and assemble its analysis (the analysis models below)."""
    kind = run.kind
    step = AGENT_STEPS[kind][0].name
    reply = yield from run.step(step, agent_first_messages(kind, case, options))
    if isinstance(reply, RubricReply):
        return _rubric(run, reply, options)
    if isinstance(reply, ConversationVerdictReply):
        return {"satisfied": reply.satisfied, "reason": reply.reason}
    if isinstance(reply, ToolEvaluationsReply):
        return {
            "evaluations": [e.model_dump() for e in reply.evaluations],
            "missing_tools": list(reply.missing_tools),
            "reason": reply.overall_assessment,
        }
    if isinstance(reply, TrajectoryStepsReply):
        return {
            "steps": [s.model_dump() for s in reply.steps],
            "missing_steps": list(reply.missing_steps),
            "extra_steps": list(reply.extra_steps),
            "reason": reply.overall_assessment,
        }
    raise KeyError(kind)


# =========================================================================== analyses


# --- rubric -----------------------------------------------------------------
class CriterionVerdict(AnalysisModel):
    criterion: str = ""
    required: bool = True
    satisfied: bool
    reason: str = ""


class RubricAnalysis(AnalysisModel):
    criteria: list[CriterionVerdict]
    reason: str = ""


# --- multi_turn_judge -------------------------------------------------------
class MultiTurnAnalysis(AnalysisModel):
    satisfied: bool
    reason: str = ""


# --- tool_call_accuracy_llm -------------------------------------------------
class ToolEvaluation(AnalysisModel):
    tool: str = ""
    appropriate: bool
    reason: str = ""


class ToolCallLLMAnalysis(AnalysisModel):
    evaluations: list[ToolEvaluation]
    missing_tools: list[str] = []
    reason: str = ""


# --- trajectory_accuracy_llm ------------------------------------------------
class StepEvaluation(AnalysisModel):
    name: str = ""
    necessary: bool
    in_order: bool
    reason: str = ""


class TrajectoryLLMAnalysis(AnalysisModel):
    steps: list[StepEvaluation]
    missing_steps: list[str] = []
    extra_steps: list[str] = []
    reason: str = ""


# =========================================================================== options

_LIST_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


def _criteria(value: Any) -> Any:
    """A rubric as a text (one required criterion per non-blank line, list markers such
    as "-", "*", "1." stripped, as Mastra reads one), a list of texts (all required) or a
    list of ``{"description", "required"}``."""
    if isinstance(value, str):
        lines = (_LIST_MARKER.sub("", line).strip() for line in value.split("\n"))
        return [{"description": line, "required": True} for line in lines if line]
    if isinstance(value, list):
        return [
            {"description": item, "required": True} if isinstance(item, str) else item
            for item in value
        ]
    return value


def _not_blank(value: Any) -> Any:
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()
    return value


Criterion = Annotated[
    str, BeforeValidator(_not_blank), Field(min_length=1, max_length=2000)
]


class RubricCriterion(OptionsModel):
    description: Criterion = Field(title="Criterion")
    required: bool = Field(
        default=True,
        title="Required",
        description="Optional criteria count only when the rubric has no required one.",
        strict=True,
    )


DEFAULT_RUBRIC_CRITERIA: list[dict[str, Any]] = [
    {"description": "The output answers the task it was given.", "required": True},
    {
        "description": "The output is correct and does not invent facts.",
        "required": True,
    },
]


class RubricOptions(CommonOptions):
    criteria: Annotated[
        list[RubricCriterion],
        BeforeValidator(_criteria),
        Field(min_length=1, max_length=50),
    ] = Field(
        default_factory=lambda: [
            RubricCriterion.model_validate(c) for c in DEFAULT_RUBRIC_CRITERIA
        ],
        title="Criteria",
        description=(
            "The rubric: one criterion per line (all required), or a list of "
            '{"description", "required"}. The score is the scale when every required '
            "criterion is met (every criterion when none is required), else 0."
        ),
    )


DEFAULT_MULTI_TURN_CRITERION = (
    "The assistant answered every request the user made in the conversation, "
    "correctly and helpfully."
)


class MultiTurnJudgeOptions(CommonOptions):
    criterion: Criterion = Field(
        default=DEFAULT_MULTI_TURN_CRITERION,
        title="Criterion",
        description=(
            "What the whole conversation must achieve, in plain words. The score is "
            "the scale when the judge finds it satisfied, else 0."
        ),
    )


def _tool_list(value: Any) -> Any:
    """Tools as a list of {"name", "description"}, or a text with one "name: description"
    per line (a form field); blank: none."""
    if isinstance(value, str):
        tools = []
        for line in value.split("\n"):
            name, _, description = line.partition(":")
            if name.strip():
                tools.append({"name": name.strip(), "description": description.strip()})
        return tools
    return value


class AvailableTool(OptionsModel):
    name: ToolName = Field(title="Tool name")
    description: str = Field(default="", max_length=2000, title="What it does")


class ToolCallAccuracyLLMOptions(CommonOptions):
    available_tools: Annotated[
        list[AvailableTool], BeforeValidator(_tool_list), Field(max_length=200)
    ] = Field(
        default_factory=list,
        title="Available tools",
        description=(
            "The tools the agent could call, one 'name: description' per line; the "
            "judge reads them to decide which calls were appropriate or missing."
        ),
    )


class TrajectoryAccuracyLLMOptions(CommonOptions):
    expected_tool_order: Annotated[
        list[ToolName] | None, BeforeValidator(name_list)
    ] = Field(
        default=None,
        title="Expected tools",
        description=(
            "The tools the agent should call, in order (comma-separated). Leave empty "
            "to use the item's expected trajectory (or expected tool calls), or to let "
            "the judge assess the trajectory from the task alone."
        ),
    )


# =========================================================================== formulas


def score_rubric(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """1 x scale when every required criterion is met (every criterion, when none is
    required), else 0; no criteria: 1 x scale. Not rounded (Mastra does not round it)."""
    criteria = analysis["criteria"]
    if not criteria:
        return float(options["scale"])
    required = [c for c in criteria if c["required"]]
    met = all(c["satisfied"] for c in (required or criteria))
    return float((1 if met else 0) * options["scale"])


def score_multi_turn_judge(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """1 x scale when the conversation satisfies the criterion, else 0. Not rounded."""
    return float((1 if analysis["satisfied"] else 0) * options["scale"])


def score_tool_call_accuracy_llm(
    analysis: dict[str, Any], options: dict[str, Any]
) -> float:
    """round2(appropriate calls / evaluated calls x scale); no evaluations: 0 when the
    judge names missing tools, else 1 (x scale)."""
    evaluations = analysis["evaluations"]
    if not evaluations:
        return round_half_up((0 if analysis["missing_tools"] else 1) * options["scale"])
    appropriate = sum(1 for e in evaluations if e["appropriate"])
    return round_half_up(appropriate / len(evaluations) * options["scale"])


def trajectory_llm_ratio(analysis: dict[str, Any]) -> float:
    """Mastra's unrounded, unscaled trajectory score (see SCORERS.md)."""
    steps = analysis["steps"]
    missing = len(analysis["missing_steps"])
    if not steps:
        if missing:
            return 0.0
        return 0.5 if analysis["extra_steps"] else 1.0
    total = len(steps)
    necessary = sum(1 for s in steps if s["necessary"])
    ordered = sum(1 for s in steps if s["in_order"])
    penalty = missing / (total + missing) if missing else 0.0
    score = necessary / total * 0.6 + ordered / total * 0.3 - penalty * 0.1
    return max(0.0, min(1.0, score))


def score_trajectory_accuracy_llm(
    analysis: dict[str, Any], options: dict[str, Any]
) -> float:
    """round2((0.6 x necessary share + 0.3 x in-order share - 0.1 x missing share),
    clamped to [0, 1], x scale); a perfect trajectory scores 0.9 (Mastra's weights)."""
    return round_half_up(trajectory_llm_ratio(analysis) * options["scale"])


# =========================================================================== kinds


def _agent_kind(
    name: str,
    options: type[CommonOptions],
    analysis: type[AnalysisModel],
    score: ScoreFunction,
    entry: dict[str, Any],
) -> KindDef:
    return KindDef(
        name=name,
        entry=entry,
        options=options,
        analysis=analysis,
        score=score,
        steps=AGENT_STEPS[name],
        role=ROLE[name],
        first_messages=functools.partial(agent_first_messages, name),
        analyse=agent_analyse,
    )


RUBRIC = _agent_kind(
    "rubric",
    RubricOptions,
    RubricAnalysis,
    score_rubric,
    {
        "label": "Rubric checklist",
        "description": (
            "The judge checks the output against each criterion of your rubric; the "
            "score is the full scale when every required criterion is met (every "
            "criterion when none is required), else 0."
        ),
        "needs_judge": True,
        "required_fields": ("output",),
        "direction": "higher",
        "steps": ("criteria",),
        "overridable": {"criteria.*.satisfied": [True, False]},
        "value_labels": {"criteria.*.satisfied": {"true": "met", "false": "not met"}},
    },
)
MULTI_TURN_JUDGE = _agent_kind(
    "multi_turn_judge",
    MultiTurnJudgeOptions,
    MultiTurnAnalysis,
    score_multi_turn_judge,
    {
        "label": "Multi-turn judge",
        "description": (
            "The judge reads the whole conversation and decides whether it satisfies "
            "one criterion you write: the full scale if it does, else 0."
        ),
        "needs_judge": True,
        "required_fields": ("output",),
        "direction": "higher",
        "steps": ("conversation_verdict",),
        "overridable": {"satisfied": [True, False]},
        "value_labels": {"satisfied": {"true": "satisfied", "false": "not satisfied"}},
    },
)
TOOL_CALL_ACCURACY_LLM = _agent_kind(
    "tool_call_accuracy_llm",
    ToolCallAccuracyLLMOptions,
    ToolCallLLMAnalysis,
    score_tool_call_accuracy_llm,
    {
        "label": "Tool call accuracy (judge)",
        "description": (
            "The judge decides whether each tool call the agent made was appropriate "
            "for the request; the score is the share of appropriate calls (with no "
            "call: 1, or 0 when a tool was needed)."
        ),
        "needs_judge": True,
        "required_fields": ("input", "tool_calls"),
        "direction": "higher",
        "steps": ("tool_evaluations",),
        "overridable": {"evaluations.*.appropriate": [True, False]},
        "value_labels": {
            "evaluations.*.appropriate": {
                "true": "appropriate",
                "false": "inappropriate",
            }
        },
    },
)
TRAJECTORY_ACCURACY_LLM = _agent_kind(
    "trajectory_accuracy_llm",
    TrajectoryAccuracyLLMOptions,
    TrajectoryLLMAnalysis,
    score_trajectory_accuracy_llm,
    {
        "label": "Trajectory accuracy (judge)",
        "description": (
            "The judge assesses the agent's sequence of tool calls, against the "
            "expected trajectory when there is one: 0.6 x share of necessary steps + "
            "0.3 x share in a logical order - 0.1 x share missing (at most 0.9)."
        ),
        "needs_judge": True,
        "required_fields": ("tool_calls",),
        "direction": "higher",
        "steps": ("trajectory_steps",),
        "overridable": {
            "steps.*.necessary": [True, False],
            "steps.*.in_order": [True, False],
        },
        "value_labels": {
            "steps.*.necessary": {"true": "necessary", "false": "unnecessary"},
            "steps.*.in_order": {"true": "in order", "false": "out of order"},
        },
    },
)
