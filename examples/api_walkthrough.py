"""evalsite through its REST API, end to end, with httpx.

    export EVALSITE_URL=http://127.0.0.1:8000
    export EVALSITE_TOKEN=$(python manage.py create_api_token alice | tail -1 | awk '{print $NF}')
    python examples/api_walkthrough.py            # writes run-<id>.csv

1. create a project, 2. upload a small CSV dataset (columns already named input,
output, context, reference: no mapping needed), 3. create two LLM-judge scorers on the
project's built-in offline judge and one text scorer, 4. start a run, 5. poll until it
is done, 6. download the results as CSV (streamed to disk).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx

FINISHED = {"done", "done_with_errors", "cancelled", "failed"}

DATASET_CSV = """input,output,context,reference,topic
What is the capital of France?,Paris is the capital of France.,"[""Paris is the capital and largest city of France.""]",Paris,geography
Who wrote Hamlet?,Hamlet was written by Christopher Marlowe.,"[""Hamlet is a tragedy written by William Shakespeare around 1600.""]",William Shakespeare,literature
How many moons does Mars have?,Mars has two moons: Phobos and Deimos.,"[""Mars has two small moons, Phobos and Deimos.""]",Two,astronomy
When did the Berlin Wall fall?,The Berlin Wall fell in 1989.,"[""The Berlin Wall fell on 9 November 1989.""]",1989,history
"""


def check(response: httpx.Response) -> Any:
    """The JSON body, or a readable error with the API's {detail, errors} body."""
    if response.is_error:
        try:
            body = response.json()
        except ValueError:
            body = {"detail": response.text[:200], "errors": []}
        fields = "; ".join(
            f"{e['field']}: {e['message']}" for e in body.get("errors", [])
        )
        raise SystemExit(
            f"{response.request.method} {response.request.url} -> {response.status_code}: "
            f"{body.get('detail')}" + (f" ({fields})" if fields else "")
        )
    return response.json()


def walkthrough(
    client: httpx.Client,
    *,
    out_dir: Path = Path("."),
    poll_seconds: float = 1.0,
    timeout_seconds: float = 600,
) -> Path:
    project = check(client.post("/api/projects", json={"name": "API walkthrough"}))
    print(f"project {project['id']}")

    dataset = check(
        client.post(
            f"/api/projects/{project['id']}/datasets",
            data={"name": "capitals-and-authors"},
            files={"file": ("qa.csv", DATASET_CSV.encode(), "text/csv")},
        )
    )
    print(f"dataset {dataset['id']}: {dataset['item_count']} items")

    judges = check(client.get(f"/api/projects/{project['id']}/judges"))["items"]
    judge = next(j for j in judges if j["is_offline"])  # built into every project
    scorer_ids = []
    for name, kind, judge_id in (
        ("Faithfulness", "faithfulness", judge["id"]),
        ("Hallucination", "hallucination", judge["id"]),
        ("Similarity to reference", "content_similarity", None),
    ):
        scorer = check(
            client.post(
                f"/api/projects/{project['id']}/scorers",
                json={"name": name, "kind": kind, "judge_id": judge_id, "options": {}},
            )
        )
        scorer_ids.append(scorer["id"])
    print(f"scorers {scorer_ids}")

    run = check(
        client.post(
            f"/api/projects/{project['id']}/runs",
            json={"dataset_id": dataset["id"], "scorer_ids": scorer_ids},
        )
    )
    print(f"run {run['id']} {run['status']}")

    deadline = time.monotonic() + timeout_seconds
    while True:
        run = check(client.get(f"/api/runs/{run['id']}"))
        progress = run["progress"]
        print(
            f"  {run['status']}: {progress['done']}/{progress['total']} done, {progress['errors']} errors"
        )
        if run["status"] in FINISHED:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"run {run['id']} did not finish in {timeout_seconds} s")
        time.sleep(poll_seconds)
    for agg in run["aggregates"]:
        print(
            f"  {json.dumps({k: agg.get(k) for k in ('name', 'judge_mean', 'final_mean', 'final_pass_rate')})}"
        )

    path = out_dir / f"run-{run['id']}.csv"
    with client.stream("GET", f"/api/runs/{run['id']}/export.csv") as response:
        if response.is_error:
            response.read()
            check(response)
        with path.open("wb") as fh:
            for chunk in response.iter_bytes():
                fh.write(chunk)
    print(f"wrote {path}")
    return path


def main() -> int:
    base_url = os.environ.get("EVALSITE_URL", "http://127.0.0.1:8000")
    token = os.environ.get("EVALSITE_TOKEN")
    if not token:
        print(
            "set EVALSITE_TOKEN (python manage.py create_api_token <user>)",
            file=sys.stderr,
        )
        return 2
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as client:
        walkthrough(client)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
