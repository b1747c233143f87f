"""Uploaded documents are read in a child process under limits, and the parsers do not spend more than
the document is worth (issue 24, findings 2-4): a docx that lies about its unzipped size, a docx that
python-docx's API reads in more than linear time, a PDF whose pages share one content stream.

Memory is measured honestly: the parent's peak resident size (VmHWM) is reset before the call
(/proc/self/clear_refs) and read after it, so a bomb inflated in this process would show; CPU spent
in a child shows in RUSAGE_CHILDREN, which only a waited-for child process adds to."""

from __future__ import annotations

import io
import re
import resource
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from docx.oxml.styles import CT_Styles
from docx.oxml.table import CT_Tc
from pypdf import PageObject, PdfReader, PdfWriter

from debates import documents
from debates.documents import Limits, Section, extract, extract_isolated
from debates.models import Debate
from testkit.documents import make_docx, make_docx_bomb, make_pdf, make_shared_stream_pdf, make_slow_docx
from tests.web.formpage import errors_in

MB = 1024 * 1024
BOMB_BYTES = 256 * MB  # zeros, in a zip that says 1,000 bytes
TOO_SLOW = "took too long to read"
TOO_BIG = "unpacks to more than 50 MB (it says less)"


def peak_rss_mb() -> int:
    with open("/proc/self/status") as status:
        return int(re.search(r"VmHWM:\s+(\d+)", status.read()).group(1)) // 1024


def reset_peak_rss() -> None:
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # resets VmHWM to the current resident size (Linux 4.0+)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.fixture(scope="module")
def bomb() -> bytes:
    data = make_docx_bomb(BOMB_BYTES)
    assert len(data) < documents.MAX_BYTES  # it passes the upload's size limit: only unzipping tells
    return data


def refusal(name: str, data: bytes, **limits) -> str:
    with pytest.raises(documents.DocumentError) as caught:
        extract_isolated(name, data, Limits(**limits))
    return str(caught.value)


# -- finding 2: the docx bomb ------------------------------------------------------------------------


def test_the_docx_bomb_is_refused_in_a_child_and_the_parent_does_not_grow(bomb):
    before = children_cpu()
    reset_peak_rss()
    start = peak_rss_mb()
    message = refusal("bomb.docx", bomb)
    assert message.startswith(f"bomb.docx {TOO_BIG}")
    assert peak_rss_mb() - start < 50, "the bomb was inflated in the web process"
    assert children_cpu() > before, "no child process did the reading"


def test_the_parse_counts_what_the_zip_really_inflates_to_not_what_it_says(bomb):
    # In the child's own code: the bomb is refused after at most MAX_UNZIPPED, never inflated whole.
    reset_peak_rss()
    start = peak_rss_mb()
    with pytest.raises(documents.DocumentError, match=f"^bomb.docx {re.escape(TOO_BIG)}"):
        extract("bomb.docx", bomb)
    assert peak_rss_mb() - start < 50


def test_a_bomb_past_the_memory_limit_is_still_refused_as_too_big_to_read(monkeypatch):
    # With the unzip count out of the way, the child's address-space limit is the backstop.
    data = make_slow_docx(paragraphs=300_000)  # 0.8 MB that lxml holds as ~300 MB of tree
    message = refusal("long.docx", data, memory_bytes=150 * MB)
    assert message == "long.docx uses too much memory when unpacked; save it again as a smaller file or paste its text."


# -- finding 3: honest docx files that python-docx's API reads in more than linear time --------------


def test_paragraph_styles_are_looked_up_once_not_once_per_paragraph(monkeypatch):
    # python-docx finds a paragraph's style by searching every style of the document for the default,
    # on every `.style`: paragraphs x styles, ~1 ms a paragraph with Word's 160 styles.
    data = make_docx([("heading", "Findings"), *[f"Paragraph {i}." for i in range(2_000)], ("heading", "End"), "x"])
    searches = []
    default_for = CT_Styles.default_for
    monkeypatch.setattr(CT_Styles, "default_for", lambda self, kind: searches.append(kind) or default_for(self, kind))
    document = extract("long.docx", data)
    assert [section.label for section in document.sections][0] == "Findings"
    assert document.sections[-1] == Section("End", "x")
    assert len(searches) <= 1


def test_a_vertically_merged_column_is_read_in_one_pass(monkeypatch):
    # python-docx reads a cell that continues a vertical merge by walking up to the merge's first row,
    # again for every row: rows² steps (400 rows, a 38 KB file: 6 s; 800 rows: ~25 s).
    data = make_slow_docx(merged_rows=300)
    walks = []
    above = CT_Tc._tc_above
    monkeypatch.setattr(CT_Tc, "_tc_above", property(lambda tc: walks.append(1) or above.fget(tc)))
    document = extract("merged.docx", data)
    rows = [line for line in document.text.split("\n") if " | " in line]
    assert rows[:3] == ["Merged | 0", "Merged | 1", "Merged | 2"]  # the merged cell shown on every row, as before
    assert len(rows) == 300 and rows[-1] == "Merged | 299"
    assert walks == []


def test_merged_cells_read_as_python_docx_reads_them():
    import docx

    document = docx.Document()
    table = document.add_table(rows=3, cols=3)
    for row in range(3):
        for column in range(3):
            table.cell(row, column).text = f"{row}{column}"
    table.cell(0, 0).merge(table.cell(1, 1))  # a 2x2 block: across and down
    table.cell(2, 1).merge(table.cell(2, 2))
    out = io.BytesIO()
    document.save(out)
    assert extract("grid.docx", out.getvalue()).text == "00 01 10 11 | 02\n00 01 10 11 | 12\n20 | 21 22"


def test_a_document_that_needs_more_cpu_than_allowed_is_refused_as_too_slow():
    # Within every budget (7.5 MB of page content) but seconds of work: the CPU limit stops it.
    data = make_shared_stream_pdf(pages=300, content_bytes=25_000)
    assert refusal("slow.pdf", data, cpu_seconds=1) == (
        "slow.pdf took too long to read; save it again as a smaller file or paste its text."
    )


def test_a_child_past_its_wall_clock_limit_is_stopped_and_the_upload_refused():
    data = make_shared_stream_pdf(pages=300, content_bytes=25_000)
    assert TOO_SLOW in refusal("slow.pdf", data, cpu_seconds=60, wall_seconds=1)


def test_readers_at_once_are_capped_and_a_waiting_upload_is_refused_as_busy():
    taken = 0
    try:
        while documents._READING.acquire(blocking=False):  # every slot held, as by slow uploads
            taken += 1
        assert taken == documents.MAX_READERS
        assert refusal("notes.txt", b"text", wall_seconds=0.2) == (
            "notes.txt was not read: the server is reading other documents; try again in a minute."
        )
    finally:
        for _ in range(taken):
            documents._READING.release()
    assert extract_isolated("notes.txt", b"text").text == "text"


def test_long_runs_of_spaces_are_cleaned_in_linear_time():
    # The trailing-space and heading regexes retried each space of a run against the rest of it: a
    # 2 MB line of spaces in a heading was hours of CPU. Read under the real limits now.
    spaces = " " * 2_000_000
    document = extract_isolated("spaces.md", f"# Title{spaces}x\n\nbody{spaces}y\n".encode())
    assert document.sections[0].label.startswith("Title") and document.sections[0].label.endswith("x")
    text = extract_isolated("spaces.txt", f"a{spaces}b\n".encode()).text
    assert text.startswith("a") and text.endswith("b")


# -- finding 4: PDF pages sharing one content stream --------------------------------------------------


def test_pages_sharing_one_big_content_stream_are_refused_in_a_child():
    data = make_shared_stream_pdf(pages=300, content_bytes=10 * MB)  # 10 MB of text operators, ~20 KB
    assert len(data) < 100_000
    assert refusal("shared.pdf", data) == (
        "shared.pdf has more on its pages than can be read in time; save it again as a smaller file or paste its text."
    )


def test_each_page_counts_the_shared_stream_again(monkeypatch):
    monkeypatch.setattr(documents, "MAX_PDF_CONTENT", 100_000)
    data = make_shared_stream_pdf(pages=50, content_bytes=30_000)  # 30 KB a page, 1.5 MB in all
    with pytest.raises(documents.DocumentError, match="has more on its pages than can be read in time"):
        extract("shared.pdf", data)


def test_pages_read_before_the_content_budget_runs_out_are_kept(monkeypatch):
    page = len(b"BT /F1 12 Tf 72 720 Td (page 1) Tj ET")  # what make_pdf draws on each of the first pages
    monkeypatch.setattr(documents, "MAX_PDF_CONTENT", 4 * page + 10)
    document = extract("long.pdf", make_pdf([f"page {n}" for n in range(1, 11)]))
    assert document.truncated
    assert [section.label for section in document.sections] == ["p. 1", "p. 2", "p. 3", "p. 4"]


def test_pages_past_max_chars_are_not_parsed(monkeypatch):
    monkeypatch.setattr(documents, "MAX_CHARS", 5_000)
    parsed = []
    extract_text = PageObject.extract_text
    monkeypatch.setattr(PageObject, "extract_text", lambda page, *a, **k: parsed.append(1) or extract_text(page))
    document = extract("long.pdf", make_pdf(["\n".join(["x" * 90] * 12)] * 100))  # ~1,100 characters a page
    assert document.truncated and sum(len(s.text) for s in document.sections) == 5_000
    assert len(parsed) == 5  # the fifth page crosses MAX_CHARS; the 95 after it are not read


# -- ordinary documents: the same sections through the child --------------------------------------------


def encrypted(pdf: bytes, password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password=password, owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


ORDINARY = [
    ("notes.txt", "第一段：城市化提高了生产率。\n\n第二段：但是住房成本上升。".encode("gb18030")),
    ("notes.md", b"Intro.\n\n# Claims\n\nThe first claim.\n\n## Sources\n\n- a link\n"),
    ("brief.pdf", make_pdf(["Claim one (cited)\nsecond line", "", "Claim three"])),
    (
        "report.docx",
        make_docx(["Preamble.", ("heading", "Background"), "First.", [["Year", "Output"], ["2020", "12 t"]]]),
    ),
    ("big.txt", ("x" * 999 + "\n\n").encode() * 300),  # truncated at MAX_CHARS
]


@pytest.mark.parametrize(("name", "data"), ORDINARY, ids=[name for name, _ in ORDINARY])
def test_an_ordinary_document_reads_the_same_in_the_child(name, data):
    assert extract_isolated(name, data) == extract(name, data)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("locked.pdf", encrypted(make_pdf(["sealed"]), "secret")),
        ("broken.pdf", b"%PDF-1.4 garbage"),
        ("memo.docx", b"\xd0\xcf\x11\xe0" + bytes(500)),
        ("odd.txt", b"\x80\xff" * 100),
    ],
)
def test_a_refusal_reads_the_same_from_the_child(name, data):
    with pytest.raises(documents.DocumentError) as here:
        extract(name, data)
    with pytest.raises(documents.DocumentError) as there:
        extract_isolated(name, data)
    assert there.value.text.as_dict() == here.value.text.as_dict()  # msgid and parameters: translatable


def test_the_child_gets_none_of_the_servers_secrets(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "secret")
    environment = documents._child_environment()
    assert "sk-secret" not in environment.values() and "secret" not in environment.values()
    assert set(environment) <= {"PATH", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "LC_ALL"}


# -- where a user meets it: the start form, the command line ------------------------------------------


@pytest.mark.django_db
def test_the_start_form_says_why_beside_the_field(libraries, no_runs, alice, bomb):
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(alice)
    reset_peak_rss()
    start = peak_rss_mb()
    response = client.post(
        "/debates/new/",
        {
            "topic": "Should we move the team to a four-day week?",
            "format": "duel",
            "documents": [SimpleUploadedFile("bomb.docx", bomb, content_type="application/octet-stream")],
        },
    )
    assert response.status_code == 200 and not Debate.objects.exists()
    errors = errors_in(response.content.decode(), "field-documents")
    assert f"bomb.docx {TOO_BIG}" in errors and "Choose the files again." in errors
    assert peak_rss_mb() - start < 50


@pytest.mark.django_db
def test_the_command_line_says_the_same(libraries, tmp_path: Path, bomb):
    path = tmp_path / "bomb.docx"
    path.write_bytes(bomb)
    with pytest.raises(CommandError, match=f"bomb.docx {re.escape(TOO_BIG)}"):
        call_command("debate", "Should we move the team to a four-day week?", "--document", str(path))
