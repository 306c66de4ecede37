from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from evalsite.accounts.services import api_token_create


class Command(BaseCommand):
    help = "Create an API token for USER and print it (the raw token is the last word)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="cli")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"No user named {options['username']!r}.")
        _, raw = api_token_create(user=user, name=options["name"])
        self.stdout.write(f"API token for {user.get_username()}: {raw}")
