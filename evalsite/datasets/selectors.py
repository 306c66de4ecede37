"""Dataset reads, always scoped to what the user may see."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.http import Http404

from evalsite.accounts.models import Project
from evalsite.accounts.selectors import membership_get, require_role
from evalsite.datasets.models import Dataset, Item


def dataset_get_for_user(
    *,
    user: AbstractBaseUser | AnonymousUser,
    pk: int,
    project_id: int | None = None,
    write: bool = False,
) -> Dataset:
    """The dataset if `user` is a member of its project: 404 otherwise, 403 on write for
    viewers. With `project_id`, a dataset of another project is a 404 too."""
    dataset = Dataset.objects.select_related("project").filter(pk=pk).first()
    if dataset is None or (project_id is not None and dataset.project_id != project_id):
        raise Http404("No such dataset.")
    membership = membership_get(user=user, project_id=dataset.project_id)
    require_role(membership, write=write)
    dataset.project.membership = membership  # type: ignore[attr-defined]
    return dataset


def dataset_list(*, project: Project) -> QuerySet[Dataset]:
    return Dataset.objects.filter(project=project).order_by("-created_at", "-id")


def item_list(*, dataset: Dataset) -> QuerySet[Item]:
    return Item.objects.filter(dataset=dataset).order_by("index")
