from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from evalsite.accounts.models import Project, Role
from evalsite.accounts.services import membership_set, project_create
from evalsite.demo.services import demo_load

DEMO_PROJECT = "Demo: support-bot RAG"


class Command(BaseCommand):
    help = (
        "Create the demo user (demo/demo) and the demo project with data. Idempotent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-run", action="store_true", help="Skip the demo run.")

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            user_model = get_user_model()
            user, created = user_model.objects.get_or_create(
                username="demo", defaults={"email": "demo@example.com"}
            )
            if created:
                user.set_password("demo")
                user.save()
            project = Project.objects.filter(
                name=DEMO_PROJECT, memberships__user=user
            ).first()
            if project is None:
                project = project_create(
                    user=user,
                    name=DEMO_PROJECT,
                    description=(
                        "Fifty questions to a support assistant, with retrieved context and "
                        "reference answers, judged by the offline heuristic judge."
                    ),
                )
            membership_set(project=project, user=user, role=Role.OWNER)
        demo_load(
            project=project,
            user=user,
            with_run=not options["no_run"],
            stdout=self.stdout,
        )
        self.stdout.write(f"demo project #{project.pk} ready (login demo / demo)")
