"""Build support_agent.jsonl: a support agent's tool calls for the fictional "Nimbus
Notes" app (the demo's agent dataset).

Deterministic, run from the repo root:
    .venv/bin/python evalsite/datasets/demo_data/build_support_agent.py

Each task has an expected trajectory (the tools a careful agent calls, in order, with
the arguments that matter) and one agent run of a kind named in metadata.case_type:
- "correct": the expected calls, in order;
- "wrong_order": acts before it looks (refunds before checking the account);
- "missing_tool": answers without the lookup it needed;
- "extra_calls": the expected calls plus a redundant repeat of one;
- "wrong_arguments": the right tools, one with the wrong arguments.
Every item carries the system prompt, the whole conversation (user, assistant, tool
turns) and a baseline output from an earlier version of the agent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("support_agent.jsonl")

SYSTEM_PROMPT = (
    "You are the Nimbus Notes support agent. Look things up before you answer: use "
    "search_help_center for how-to questions and get_account before changing anything "
    "on a customer's account. Refund only within 30 days of the charge. Be brief."
)

Call = dict[str, Any]


def call(name: str, arguments: dict[str, Any], result: Any, **extra: Any) -> Call:
    return {"name": name, "arguments": arguments, "result": result, **extra}


TASKS: list[dict[str, Any]] = [
    {
        "task": "export_pdf",
        "question": "How do I export a notebook as PDF?",
        "calls": [
            call(
                "search_help_center",
                {"query": "export notebook pdf"},
                ["Export is under File > Export; PDF and Markdown are supported."],
            )
        ],
        "expected": [{"name": "search_help_center"}],
        "answer": "Open the notebook and choose File > Export > PDF.",
        "baseline": "Use File > Export and pick PDF.",
        "case_type": "correct",
    },
    {
        "task": "refund_recent",
        "question": "I was charged twice for Plus yesterday, can I get one back?",
        "calls": [
            call(
                "get_account",
                {"email": "maria@example.com"},
                {"plan": "plus", "charges": [{"id": "ch_81", "days_ago": 1}] * 2},
            ),
            call(
                "issue_refund",
                {"charge_id": "ch_81", "reason": "duplicate"},
                {"status": "refunded", "amount": 4.99},
            ),
        ],
        "expected": [
            {"name": "get_account"},
            {
                "name": "issue_refund",
                "arguments": {"charge_id": "ch_81", "reason": "duplicate"},
            },
        ],
        "answer": "I refunded the duplicate charge of $4.99; it reaches your card in 5-10 days.",
        "baseline": "The duplicate $4.99 charge is refunded.",
        "case_type": "correct",
    },
    {
        "task": "refund_order",
        "question": "Please refund my last Pro payment, I don't use it.",
        "calls": [
            call(
                "issue_refund",
                {"charge_id": "ch_17", "reason": "unused"},
                {"status": "refunded", "amount": 9.99},
            ),
            call(
                "get_account",
                {"email": "tom@example.com"},
                {"plan": "pro", "charges": [{"id": "ch_17", "days_ago": 12}]},
            ),
        ],
        "expected": [{"name": "get_account"}, {"name": "issue_refund"}],
        "answer": "Done: your last Pro payment of $9.99 is refunded.",
        "baseline": "I checked your account and refunded the $9.99 charge from 12 days ago.",
        "case_type": "wrong_order",
    },
    {
        "task": "sync_status",
        "question": "Is sync free on my plan?",
        "calls": [],
        "expected": [{"name": "get_account"}, {"name": "search_help_center"}],
        "answer": "Yes, sync is free on every plan.",
        "baseline": "Sync is included on all plans, including yours (Free).",
        "case_type": "missing_tool",
    },
    {
        "task": "storage_limit",
        "question": "How much storage do I have left?",
        "calls": [
            call(
                "get_account",
                {"email": "li@example.com"},
                {"plan": "plus", "storage_used_gb": 41.5, "storage_gb": 50},
            ),
            call(
                "get_account",
                {"email": "li@example.com"},
                {"plan": "plus", "storage_used_gb": 41.5, "storage_gb": 50},
            ),
        ],
        "expected": [{"name": "get_account"}],
        "answer": "You use 41.5 GB of your 50 GB, so 8.5 GB are left.",
        "baseline": "8.5 GB of 50 GB are free.",
        "case_type": "extra_calls",
    },
    {
        "task": "ticket_bug",
        "question": "The iPad app crashes when I open a shared notebook.",
        "calls": [
            call(
                "search_help_center",
                {"query": "ipad crash shared notebook"},
                ["Known issue 4.2.1: update to 4.2.2."],
            ),
            call(
                "create_ticket",
                {"priority": "low", "summary": "iPad crash on shared notebook"},
                {"ticket": "NN-4711"},
            ),
        ],
        "expected": [
            {"name": "search_help_center"},
            {
                "name": "create_ticket",
                "arguments": {
                    "priority": "high",
                    "summary": "iPad crash on shared notebook",
                },
            },
        ],
        "answer": "This is a known issue fixed in 4.2.2; I also opened ticket NN-4711.",
        "baseline": "Please update to 4.2.2; ticket NN-4711 tracks it.",
        "case_type": "wrong_arguments",
    },
    {
        "task": "delete_account",
        "question": "Delete my account and all my notes.",
        "calls": [
            call(
                "get_account",
                {"email": "sam@example.com"},
                {"plan": "free", "notes": 312},
            ),
            call(
                "create_ticket",
                {"priority": "normal", "summary": "Account deletion request"},
                {"ticket": "NN-4712"},
            ),
        ],
        "expected": [{"name": "get_account"}, {"name": "create_ticket"}],
        "answer": "I opened NN-4712; the team deletes the account and its 312 notes within 48 hours.",
        "baseline": "Your deletion request is NN-4712.",
        "case_type": "correct",
    },
    {
        "task": "refund_old",
        "question": "Refund my yearly plan from March, please.",
        "calls": [
            call(
                "get_account",
                {"email": "ana@example.com"},
                {"plan": "pro", "charges": [{"id": "ch_3", "days_ago": 240}]},
            ),
            call(
                "issue_refund",
                {"charge_id": "ch_3", "reason": "customer request"},
                {"status": "error", "message": "outside the refund window"},
                success=False,
            ),
            call(
                "issue_refund",
                {"charge_id": "ch_3", "reason": "customer request"},
                {"status": "error", "message": "outside the refund window"},
                success=False,
            ),
        ],
        "expected": [{"name": "get_account"}],
        "answer": "I'm sorry, that charge is outside our 30-day refund window.",
        "baseline": "Refunds are only possible within 30 days; the March charge is older.",
        "case_type": "extra_calls",
    },
    {
        "task": "markdown_import",
        "question": "Can I import my Markdown files?",
        "calls": [
            call(
                "search_help_center",
                {"query": "import markdown"},
                ["File > Import accepts .md files and folders of them."],
            )
        ],
        "expected": [{"name": "search_help_center"}],
        "answer": "Yes: File > Import accepts .md files, or a whole folder of them.",
        "baseline": "Use File > Import with your .md files.",
        "case_type": "correct",
    },
    {
        "task": "plan_upgrade",
        "question": "Upgrade me to Pro.",
        "calls": [
            call("change_plan", {"plan": "pro"}, {"status": "ok"}),
        ],
        "expected": [{"name": "get_account"}, {"name": "change_plan"}],
        "answer": "You are on Pro now.",
        "baseline": "I checked your account and moved you from Plus to Pro.",
        "case_type": "missing_tool",
    },
]


def _conversation(task: dict[str, Any]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [{"role": "user", "content": task["question"]}]
    for n, made in enumerate(task["calls"], start=1):
        turns.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": f"call_{n}",
                        "name": made["name"],
                        "arguments": made["arguments"],
                    }
                ],
            }
        )
        turns.append(
            {
                "role": "tool",
                "tool_call_id": f"call_{n}",
                "content": json.dumps(made["result"], ensure_ascii=False),
            }
        )
    turns.append({"role": "assistant", "content": task["answer"]})
    return turns


def build() -> list[dict[str, Any]]:
    return [
        {
            "input": task["question"],
            "output": task["answer"],
            "system_prompt": SYSTEM_PROMPT,
            "conversation": _conversation(task),
            "tool_calls": task["calls"],
            "expected_tool_calls": task["expected"],
            "baseline_output": task["baseline"],
            "metadata": {"case_type": task["case_type"], "task": task["task"]},
        }
        for task in TASKS
    ]


def main() -> None:
    cases = build()
    with open(OUT, "w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
