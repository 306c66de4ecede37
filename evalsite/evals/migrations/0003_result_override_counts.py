from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("evals", "0002_result_claim"),
    ]

    operations = [
        migrations.AddField(
            model_name="result",
            name="active_override_count",
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="result",
            name="verdict_flip_count",
            field=models.PositiveIntegerField(
                db_default=0,
                default=0,
                help_text="Active verdict overrides that differ from the judge.",
            ),
        ),
    ]
