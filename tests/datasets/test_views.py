from __future__ import annotations

import os
import re
import time

import pytest
from django.urls import reverse

from evalsite.datasets import uploads
from evalsite.datasets.models import Dataset, Item
from evalsite.datasets.services import dataset_create
from tests.conftest import login
from tests.datasets.conftest import GOOD_CSV, upload, uploaded_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _uploads_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path


def list_url(project):
    return reverse("datasets:list", args=[project.pk])


def upload_url(project):
    return reverse("datasets:upload", args=[project.pk])


def start_upload(client, project, data=GOOD_CSV, name="support.csv", **extra):
    return client.post(
        upload_url(project), {"file": upload(name, data), "name": "", **extra}
    )


def test_list_shows_datasets_and_upload_form_to_owner(client, project, owner):
    dataset = uploaded_dataset(project, owner, chunks=True)
    body = login(client, owner).get(list_url(project)).content.decode()
    assert "d</a>" in body and "v1" in body and ">3<" in body
    assert 'id="upload-button"' in body
    assert reverse("datasets:detail", args=[project.pk, dataset.pk]) in body


def test_viewer_sees_datasets_but_no_upload_form(client, project, owner, viewer):
    uploaded_dataset(project, owner, chunks=True)
    response = login(client, viewer).get(list_url(project))
    assert response.status_code == 200
    assert "d</a>" in response.content.decode()
    assert 'id="upload-button"' not in response.content.decode()


def test_viewer_forged_upload_is_403_and_stores_nothing(
    client, project, viewer, settings
):
    response = start_upload(login(client, viewer), project)
    assert response.status_code == 403
    assert not list(uploads.uploads_dir().glob("*.upload"))
    assert Dataset.objects.count() == 0


def test_outsider_gets_404_everywhere(client, project, owner, outsider):
    dataset = uploaded_dataset(project, owner, chunks=True)
    login(client, outsider)
    assert client.get(list_url(project)).status_code == 404
    assert start_upload(client, project).status_code == 404
    assert (
        client.get(
            reverse("datasets:detail", args=[project.pk, dataset.pk])
        ).status_code
        == 404
    )
    assert (
        client.get(reverse("datasets:map", args=[project.pk, "x" * 32])).status_code
        == 404
    )


def test_wrong_method_is_405(client, project, owner):
    login(client, owner)
    assert client.get(upload_url(project)).status_code == 405
    assert client.post(list_url(project)).status_code == 405


def test_upload_preview_map_create_flow(client, project, owner, settings):
    login(client, owner)
    response = start_upload(
        client,
        project,
        data="question;answer;docs;topic\nWhy?;Because.;a || b;x\n",
        name="faq.csv",
    )
    assert response.status_code == 302
    token = response.url.rstrip("/").rsplit("/", 1)[1]
    stored = settings.VAR_DIR / "uploads" / f"{token}.upload"
    assert stored.is_file()

    page = client.get(response.url)
    body = page.content.decode()
    assert page.status_code == 200
    assert "Why?" in body and "Because." in body  # the preview table
    assert '<option value="question" selected>' in body  # suggested mapping
    assert 'value="faq"' in body  # name from the file name

    response = client.post(
        response.url,
        {
            "name": "faq",
            "input": "question",
            "output": "answer",
            "context": "docs",
            "reference": "",
            "context_format": "delimited",
            "context_delimiter": "||",
        },
    )
    dataset = Dataset.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("datasets:detail", args=[project.pk, dataset.pk])
    item = dataset.items.get()
    assert (item.input, item.context, item.metadata) == (
        "Why?",
        ["a", "b"],
        {"topic": "x"},
    )
    assert not stored.exists()  # deleted after create
    assert (
        client.get(reverse("datasets:map", args=[project.pk, token])).status_code == 404
    )


def test_mapping_step_shows_problems_table_and_keeps_the_file(
    client, project, owner, settings
):
    login(client, owner)
    response = start_upload(
        client, project, data='input,output,context\nq,a,"[""ok""]"\nq2,a2,oops\n'
    )
    url = response.url
    response = client.post(
        url,
        {
            "name": "x",
            "input": "input",
            "output": "output",
            "context": "context",
            "context_format": "json",
        },
    )
    body = response.content.decode()
    assert response.status_code == 400
    assert "Context is not valid JSON" in body
    assert "<td>context</td>" in body
    assert Dataset.objects.count() == 0 and Item.objects.count() == 0
    # The file is still there: fix the mapping and import without uploading again.
    response = client.post(
        url,
        {
            "name": "x",
            "input": "input",
            "output": "output",
            "context": "context",
            "context_format": "delimited",
            "context_delimiter": "\\n",
        },
    )
    assert response.status_code == 302
    assert Dataset.objects.get().item_count == 2


def test_bad_file_is_refused_at_upload_with_its_message(
    client, project, owner, settings
):
    login(client, owner)
    response = start_upload(
        client, project, data="input,output\nq,caf\xe9\n".encode("latin-1")
    )
    body = response.content.decode()
    assert response.status_code == 400
    assert "row 1, column output: Byte 0xE9 is not UTF-8" in body
    assert not any((settings.VAR_DIR / "uploads").glob("*.upload"))


def test_oversized_file_is_refused_at_upload(client, project, owner, settings):
    settings.DATASET_MAX_UPLOAD_BYTES = 10
    response = start_upload(login(client, owner), project)
    assert response.status_code == 400
    assert "over the upload limit of 10 bytes" in response.content.decode()


def _body_never_parsed(monkeypatch):
    def parse(self):
        raise AssertionError("the upload body was read")

    monkeypatch.setattr("django.http.multipartparser.MultiPartParser.parse", parse)


def test_upload_over_the_limit_is_refused_before_its_body_is_read(
    client, project, owner, settings, monkeypatch
):
    settings.DATASET_MAX_UPLOAD_BYTES = 1000
    login(client, owner)
    page = reverse("datasets:list", args=[project.pk])
    _body_never_parsed(monkeypatch)
    big = "input,output\n" + "q,a\n" * 40_000  # 160 kB: over the limit + form overhead
    response = client.post(
        upload_url(project),
        {"file": upload("big.csv", big), "name": ""},
        HTTP_REFERER=f"http://testserver{page}",
    )
    assert response.status_code == 302 and response["Location"].endswith(page)
    monkeypatch.undo()
    shown = client.get(page).content.decode()
    # The request's size: the 156 kB file plus its multipart framing.
    assert re.search(
        r"The upload is 15\d\.\d KB, over the upload limit of 1000 bytes", shown
    )
    assert Dataset.objects.count() == 0
    assert not any((settings.VAR_DIR / "uploads").glob("*.upload"))


def test_upload_without_content_length_is_refused(client, project, owner, monkeypatch):
    login(client, owner)
    _body_never_parsed(monkeypatch)
    response = client.post(
        upload_url(project),
        {"file": upload("d.csv", GOOD_CSV), "name": ""},
        CONTENT_LENGTH="",
    )
    assert response.status_code == 302


def test_upload_token_is_bound_to_the_user(client, project, owner, reviewer):
    response = start_upload(login(client, owner), project)
    url = response.url
    client.logout()
    login(client, reviewer)
    assert client.get(url).status_code == 404
    assert (
        client.post(
            url, {"name": "x", "input": "input", "output": "output"}
        ).status_code
        == 404
    )


def test_upload_token_is_bound_to_the_project(client, project, owner):
    from tests.factories import MembershipFactory

    other = MembershipFactory(user=owner, role="owner").project
    response = start_upload(login(client, owner), project)
    token = response.url.rstrip("/").rsplit("/", 1)[1]
    assert (
        client.get(reverse("datasets:map", args=[other.pk, token])).status_code == 404
    )


def test_stale_uploads_are_cleaned_up(frozen_clock):
    max_age = uploads.MAX_AGE_SECONDS
    stale = uploads.uploads_dir() / ("a" * 32 + ".upload")
    fresh = uploads.uploads_dir() / ("b" * 32 + ".upload")
    for path, age in ((stale, max_age + 1), (fresh, max_age - 1)):
        path.write_bytes(b"x")
        os.utime(path, (time.time() - age,) * 2)
    assert uploads.uploads_cleanup() == 1
    assert not stale.exists() and fresh.exists()
    # Two seconds on, the other one is past the age too.
    frozen_clock.shift(2)
    assert uploads.uploads_cleanup() == 1
    assert not fresh.exists()


def test_detail_paginates_items_and_numbers_context_chunks(client, project, owner):
    dataset = uploaded_dataset(project, owner, rows=30, chunks=True)
    url = reverse("datasets:detail", args=[project.pk, dataset.pk])
    body = login(client, owner).get(url).content.decode()
    assert "q0" in body and "q24" in body and "q25" not in body
    assert (
        '<ol class="context-chunks small"><li>chunk 0a</li><li>chunk 0b</li></ol>'
        in body
    )
    assert 'href="?page=2"' in body and 'hx-get="?page=2"' in body
    assert f"/projects/{project.pk}/datasets/{dataset.pk}/export.csv" in body
    page2 = client.get(url, {"page": 2}).content.decode()
    assert "q25" in page2 and "q29" in page2 and "q0<" not in page2


def test_detail_htmx_returns_only_the_items_partial(client, project, owner):
    dataset = uploaded_dataset(project, owner, rows=30, chunks=True)
    url = reverse("datasets:detail", args=[project.pk, dataset.pk])
    response = login(client, owner).get(url, {"page": 2}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<section id="items"')
    assert "<html" not in body and "q25" in body


def test_detail_rejects_bad_page_param(client, project, owner):
    dataset = uploaded_dataset(project, owner, chunks=True)
    url = reverse("datasets:detail", args=[project.pk, dataset.pk])
    assert login(client, owner).get(url, {"page": "x"}).status_code == 400


def test_detail_of_another_projects_dataset_is_404(client, project, owner):
    from tests.factories import MembershipFactory

    other = MembershipFactory(user=owner, role="owner").project
    dataset = uploaded_dataset(project, owner, chunks=True)
    login(client, owner)
    assert (
        client.get(reverse("datasets:detail", args=[other.pk, dataset.pk])).status_code
        == 404
    )


def test_dataset_text_is_escaped(client, project, owner):
    data = 'input,output\n"<script>alert(1)</script>",ok\n'
    dataset = dataset_create(
        project=project, user=owner, file=upload("x.csv", data), name="x"
    )
    body = (
        login(client, owner)
        .get(reverse("datasets:detail", args=[project.pk, dataset.pk]))
        .content.decode()
    )
    assert "<script>alert(1)" not in body
    assert "&lt;script&gt;" in body


def test_uploads_cleanup_task_removes_stale_files():
    from evalsite.datasets.tasks import dataset_uploads_cleanup

    path = uploads.uploads_dir() / ("c" * 32 + ".upload")
    path.write_bytes(b"x")
    os.utime(path, (0, 0))
    assert dataset_uploads_cleanup.delay().get() == 1
    assert dataset_uploads_cleanup.delay().get() == 0  # safe to run twice
    assert not path.exists()


def test_hostile_file_at_upload_is_400_naming_row_and_column(client, project, owner):
    deep = "[" * 100_000 + "]" * 100_000
    data = f'{{"input": "q", "output": "a", "meta": {deep}}}\n'
    response = start_upload(login(client, owner), project, data=data, name="x.jsonl")
    body = response.content.decode()
    assert response.status_code == 400
    assert "nested more than 32 levels" in body
    assert "<td>meta</td>" in body
    assert Dataset.objects.count() == 0


def test_mapping_page_makes_the_user_choose_an_output_column(client, project, owner):
    login(client, owner)
    url = start_upload(client, project, data="question,notes\nq,n\n", name="x.csv").url
    body = client.get(url).content.decode()
    output = re.search(r'<select name="output".*?</select>', body, re.S).group()
    assert '<option value="" selected>' in output  # not the first column
    fields = {"name": "x", "input": "question", "context_format": "json"}
    response = client.post(url, {**fields, "output": ""})
    assert response.status_code == 400
    assert "Choose the column that holds the output." in response.content.decode()
    assert Dataset.objects.count() == 0
    response = client.post(url, {**fields, "output": "notes"})
    assert response.status_code == 302
    assert Dataset.objects.get().items.get().output == "n"
