"""Fifty reviewers at work, for bench_serve's load test (locust, headless).

Each simulated reviewer logs in through the login form, then, with think times of a
person reading a card, answers their share of an overlap-3 queue (the card page, then
the answer), flips a judge verdict now and then, filters the explorer, opens item
pages and looks at the run page. Their work is in the JSON file named by
BENCH_LOCUST_CONFIG (bench_serve._load_setup writes it); every answer the server
accepted is appended to answers-<user>.jsonl beside it, so the bench can check that
each one is in the database afterwards.

Logging in is the morning's warm-up, not the work: when the last reviewer has logged
in, the figures so far (logins: a password hash of Django's 1,000,000 PBKDF2 rounds
each, all fifty within seconds) are written to warmup.json and locust's statistics
start again, so that the page figures are those of people working beside the run;
the bench starts the run only then (it waits for warmup.json).
"""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path
from typing import Any

from locust import HttpUser, between, events, task

CONFIG: dict[str, Any] = json.loads(Path(os.environ["BENCH_LOCUST_CONFIG"]).read_text())
_NAMES = itertools.cycle(CONFIG["users"])
_FILTERS = ["", "?passed=false", "?passed=true", "?reviewed=false", "?q=refund"]
_logged_in: set[str] = set()


def _warm_up_done(environment: Any) -> None:
    """Keep the warm-up's figures, then start locust's statistics again."""
    entries = {
        f"{entry.method} {entry.name}": {
            "requests": entry.num_requests,
            "failures": entry.num_failures,
            "p95": entry.get_response_time_percentile(0.95),
            "median": entry.median_response_time,
        }
        for entry in environment.stats.entries.values()
    }
    (Path(CONFIG["log_dir"]) / "warmup.json").write_text(json.dumps(entries))
    environment.stats.reset_all()


class Reviewer(HttpUser):  # type: ignore[misc]
    wait_time = between(2, 6)

    def on_start(self) -> None:
        self.username = next(_NAMES)
        work = CONFIG["work"][self.username]
        self.positions = list(work["positions"])
        self.overrides = list(work["overrides"])
        self.rng = random.Random(self.username)
        self.project = CONFIG["project_id"]
        self.queue = CONFIG["queue_id"]
        self.run = CONFIG["run_id"]
        self.answers_log = Path(CONFIG["log_dir"]) / f"answers-{self.username}.jsonl"
        self.client.get("/login/", name="login page")
        response = self.client.post(
            "/login/",
            data={
                "username": self.username,
                "password": CONFIG["password"],
                "csrfmiddlewaretoken": self.client.cookies.get("csrftoken", ""),
            },
            name="log in",
            allow_redirects=False,
        )
        if response.status_code != 302:
            raise RuntimeError(
                f"{self.username} could not log in: {response.status_code}"
            )
        _logged_in.add(self.username)
        if len(_logged_in) == len(CONFIG["users"]):
            _warm_up_done(self.environment)

    def _csrf(self) -> dict[str, str]:
        return {"X-CSRFToken": self.client.cookies.get("csrftoken", "")}

    @task(6)
    def answer(self) -> None:
        if not self.positions:
            return
        position = self.positions.pop(0)
        self.client.get(
            f"/projects/{self.project}/queues/{self.queue}/?pos={position}",
            name="queue card",
        )
        with self.client.post(
            f"/api/queues/{self.queue}/entries/{position}/reviews",
            json={"passed": self.rng.random() < 0.8, "note": "load test"},
            headers=self._csrf(),
            name="answer (API)",
            catch_response=True,
        ) as response:
            if response.status_code == 201:
                response.success()
                with self.answers_log.open("a") as log:
                    log.write(
                        json.dumps({"user": self.username, "position": position}) + "\n"
                    )
            else:
                response.failure(f"{response.status_code}: {response.text[:200]}")

    @task(1)
    def override(self) -> None:
        if not self.overrides:
            return
        target = self.overrides.pop(0)
        self.client.post(
            f"/api/results/{target['id']}/overrides",
            json={
                "kind": "verdict",
                "path": "verdicts.0.verdict",
                "value": target["value"],
                "note": "load test",
            },
            headers=self._csrf(),
            name="override (API)",
        )

    @task(3)
    def explorer(self) -> None:
        query = self.rng.choice(_FILTERS)
        self.client.get(
            f"/projects/{self.project}/runs/{self.run}/results/{query}",
            name="explorer",
        )

    @task(3)
    def item_page(self) -> None:
        result_id = self.rng.choice(CONFIG["result_ids"])
        self.client.get(
            f"/projects/{self.project}/results/{result_id}/", name="item page"
        )

    @task(1)
    def run_page(self) -> None:
        self.client.get(f"/projects/{self.project}/runs/{self.run}/", name="run page")


@events.quitting.add_listener
def _exit_code(environment: Any, **_: Any) -> None:
    # The bench reads the figures from the CSVs; failed requests are one of them, not a
    # reason for locust to report failure.
    environment.process_exit_code = 0
