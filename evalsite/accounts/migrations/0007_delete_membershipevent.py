"""The access log lives in the audit log now (0006 copied its rows)."""

from __future__ import annotations

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("accounts", "0006_membershipevent_into_auditevent")]

    operations = [migrations.DeleteModel(name="MembershipEvent")]
