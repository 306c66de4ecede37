"""The results matrix and the queue-from-anywhere form are in the access walk
(tests/security/routes.py walks every URL pattern), so login, project isolation and
roles are checked on them with every other page; this pins that they are there."""

from __future__ import annotations

from tests.security.routes import pages


def test_the_matrix_and_queue_creation_are_walked():
    walked = {page.name: page.route for page in pages()}
    assert walked["review:matrix"] == (
        "projects/<int:project_id>/runs/<int:run_id>/matrix/"
    )
    assert "review:queue_create" in walked
    assert "evals:run_detail" in walked
