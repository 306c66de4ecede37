"""Items keep the passages of their text aimed at the judge (scoring.injection),
found here for the items uploaded before, as uploads find them from now on."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

from scoring.injection import case_injections

_BATCH = 2000


def _case(item: Any) -> dict[str, Any]:
    return {
        "input": item.input,
        "output": item.output,
        "context": item.context,
        "reference": item.reference,
        "system_prompt": item.system_prompt,
        "baseline_output": item.baseline_output,
        "conversation": item.conversation,
        "tool_calls": item.tool_calls,
        "expected_tool_calls": item.expected_tool_calls,
        "expected_trajectory": item.expected_trajectory,
    }


def find_judge_instructions(apps: Any, schema_editor: Any) -> None:
    Item = apps.get_model("datasets", "Item")
    last = 0
    while True:
        batch = list(Item.objects.filter(pk__gt=last).order_by("pk")[:_BATCH])
        if not batch:
            return
        last = batch[-1].pk
        flagged = []
        for item in batch:
            found = [m.as_dict() for m in case_injections(_case(item))]
            if found:
                item.judge_instructions = found
                flagged.append(item)
        Item.objects.bulk_update(flagged, ["judge_instructions"])


class Migration(migrations.Migration):
    dependencies = [
        ("datasets", "0005_dataset_match_moved_from_review"),
    ]

    operations = [
        migrations.AddField(
            model_name="item",
            name="judge_instructions",
            field=models.JSONField(blank=True, default=list, db_default=[]),
        ),
        migrations.RunPython(
            find_judge_instructions, migrations.RunPython.noop, elidable=True
        ),
    ]
