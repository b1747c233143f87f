"""Re-posting a failing start form (hardening round three, low): each post read its uploads again
in a sandboxed child, so one user re-posting a form that fails elsewhere (here: no question) with
the same file kept both document readers busy (88.7 s of CPU in 60 s with a file slow to read).
Now what a file read to, its sections or its refusal, is kept by the file's SHA-256: a re-post of
the same file costs no read. Counted, not timed: the children started."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from debates import documents, documents_kept
from tests.security.conftest import english_client

pytestmark = pytest.mark.django_db

POSTS = 6
FAILING = {"topic": "", "format": "panel"}  # no question: refused whatever the documents say


@pytest.fixture
def reads(monkeypatch):
    """The names of the files read in a child, in order (the real child still reads them)."""
    documents_kept.forget()
    started = []
    real = documents._in_child

    def counted(name, data, limits):
        started.append(name)
        return real(name, data, limits)

    monkeypatch.setattr(documents, "_in_child", counted)
    return started


def post(client, name: str, data: bytes) -> str:
    upload = SimpleUploadedFile(name, data, content_type="application/octet-stream")
    response = client.post("/debates/new/", {**FAILING, "documents": [upload]})
    assert response.status_code == 200  # the form, with its errors
    return response.content.decode()


def test_a_re_posted_file_is_read_once(libraries, alice, reads):
    client = english_client(alice)
    notes = b"# Costs\n\nOffice rent is 40 percent of overhead (re-post test 1)."
    for _ in range(POSTS):
        post(client, "notes.md", notes)
    assert reads == ["notes.md"], f"{len(reads)} reads for {POSTS} posts of one file"

    post(client, "notes.md", notes + b" Changed.")  # other bytes: read
    assert len(reads) == 2


def test_a_refused_file_is_refused_again_without_a_read(libraries, alice, reads):
    client = english_client(alice)
    broken = b"%PDF-1.7\n" + b"not a pdf at all (re-post test 2) " * 50
    pages = [post(client, "broken.pdf", broken) for _ in range(POSTS)]
    assert reads == ["broken.pdf"], f"{len(reads)} reads for {POSTS} posts of one file"
    assert "broken.pdf" in pages[-1] and pages[-1].count("Choose the files again") == pages[0].count(
        "Choose the files again"
    )
