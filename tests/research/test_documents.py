"""Uploaded documents to sections: each format's natural units and labels, the encodings a text file
may come in, and every way an upload is refused with a message naming the file."""

from __future__ import annotations

import io
import zipfile

import pytest
from pypdf import PdfReader, PdfWriter

from debates import documents
from debates.documents import (
    MAX_BYTES,
    MAX_CHARS,
    MAX_FILES,
    SECTION_CHARS,
    Document,
    DocumentError,
    Section,
    extract,
    extract_all,
)
from debates.engine.evidence import chunks, pack_from_options
from testkit.documents import make_docx, make_pdf


def labels(document: Document) -> list[str]:
    return [section.label for section in document.sections]


def refused(name: str, data: bytes) -> str:
    with pytest.raises(DocumentError) as caught:
        extract(name, data)
    return str(caught.value)


# -- pdf ------------------------------------------------------------------------------------------


def test_pdf_one_section_per_page():
    document = extract("brief.pdf", make_pdf(["Claim one (cited)\nsecond line", "Claim two on page two"]))
    assert document.kind == "pdf"
    assert document.sections == (
        Section("p. 1", "Claim one (cited)\nsecond line"),
        Section("p. 2", "Claim two on page two"),
    )
    assert document.text == "Claim one (cited)\nsecond line\n\nClaim two on page two"
    assert not document.truncated


def test_pdf_page_without_text_is_dropped_but_keeps_numbering():
    document = extract("gaps.pdf", make_pdf(["first", "", "third"]))
    assert labels(document) == ["p. 1", "p. 3"]


def test_pdf_pages_past_the_cap_are_left_out_and_said(monkeypatch):
    monkeypatch.setattr(documents, "MAX_PDF_PAGES", 2)
    document = extract("long.pdf", make_pdf(["one", "two", "three"]))
    assert labels(document) == ["p. 1", "p. 2"]
    assert document.truncated


def encrypted_pdf(user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(["sealed text"]))))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_pdf_encrypted_with_empty_password_is_read():
    assert extract("restricted.pdf", encrypted_pdf("")).text == "sealed text"


def test_pdf_with_a_password_is_refused():
    message = refused("locked.pdf", encrypted_pdf("secret"))
    assert message.startswith("locked.pdf is password-protected")
    assert "paste its text" in message


def test_pdf_without_text_layer_is_refused():
    message = refused("scan.pdf", make_pdf([""]))
    assert message == "scan.pdf has no text layer (a scan?); paste its text instead."


@pytest.mark.parametrize("data", [b"%PDF-1.4 garbage", make_pdf(["cut short"])[:150]])
def test_corrupt_pdf_is_refused_with_a_reason(data):
    message = refused("broken.pdf", data)
    assert message.startswith("broken.pdf could not be read as a PDF: ")
    assert message.endswith("; save it again or paste its text.")
    assert "Traceback" not in message


def test_png_named_pdf_is_refused():
    png = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(200)
    assert refused("photo.pdf", png).startswith("photo.pdf is not a PDF file")


# -- docx -----------------------------------------------------------------------------------------


def test_docx_sections_follow_headings_and_keep_tables():
    data = make_docx(
        [
            "Preamble before any heading.",
            ("heading", "Background"),
            "First paragraph.",
            "Second paragraph.",
            [["Year", "Output"], ["2020", "12 t"]],
            ("heading", "Findings"),
            "It rose.",
        ]
    )
    document = extract("report.docx", data)
    assert document.kind == "docx"
    assert document.sections == (
        Section("§1", "Preamble before any heading."),
        Section("Background", "First paragraph.\nSecond paragraph.\nYear | Output\n2020 | 12 t"),
        Section("Findings", "It rose."),
    )


def test_docx_without_headings_is_numbered_in_runs():
    paragraphs = [f"Paragraph {i} " + "word " * 100 for i in range(8)]  # ~510 chars each
    document = extract("plain.docx", make_docx(paragraphs))
    assert labels(document) == ["§1", "§2", "§3", "§4"]
    assert all(len(section.text) <= SECTION_CHARS for section in document.sections)
    lines = [line for section in document.sections for line in section.text.split("\n")]
    assert lines == [p.strip() for p in paragraphs]  # one paragraph a line, none lost or split


def test_docx_heading_with_nothing_under_it_is_dropped():
    document = extract("sparse.docx", make_docx([("heading", "Empty"), ("heading", "Full"), "text"]))
    assert document.sections == (Section("Full", "text"),)


def test_docx_that_is_not_a_zip_is_refused():
    assert refused("memo.docx", b"just some text, renamed").startswith("memo.docx is not a Word .docx file")


def test_old_doc_format_is_named():
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500)
    assert "old Word .doc file; save it as .docx" in refused("memo.docx", ole)


def test_zip_that_is_not_a_word_document_is_refused():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hello.txt", "hi")
    message = refused("other.docx", out.getvalue())
    assert message.startswith("other.docx could not be read as a Word document: ")
    assert "[Content_Types].xml" in message


def test_zip_bomb_docx_is_refused_before_unpacking():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("word/document.xml", "w") as member:
            block = bytes(1024 * 1024)
            for _ in range(51):
                member.write(block)
    data = out.getvalue()
    assert len(data) < MAX_BYTES  # small enough to pass the upload limit: only the unzip guard stops it
    message = refused("bomb.docx", data)
    assert message.startswith("bomb.docx would unpack to 51 MB")


# -- md and txt -----------------------------------------------------------------------------------


def test_md_split_at_headings():
    text = (
        "Intro line before headings.\n\n"
        "# Claims #\n\nThe first claim.\n\n"
        "```\n# not a heading, code\n```\n\n"
        "## Sources\n\n- a link\n- another\n"
    )
    document = extract("notes.md", text.encode())
    assert document.kind == "md"
    assert document.sections == (
        Section("§1", "Intro line before headings."),
        Section("Claims", "The first claim.\n\n```\n# not a heading, code\n```"),
        Section("Sources", "- a link\n- another"),
    )


def test_md_hashtag_without_space_is_text():
    document = extract("tags.md", b"#tag at the start\nmore")
    assert document.sections == (Section("§1", "#tag at the start\nmore"),)


CHINESE = "第一段：城市化提高了生产率。\n\n第二段：但是住房成本上升。"


@pytest.mark.parametrize(
    "data",
    [
        CHINESE.encode("utf-8"),
        b"\xef\xbb\xbf" + CHINESE.encode("utf-8"),
        CHINESE.encode("gb18030"),
        CHINESE.encode("utf-16"),  # with a BOM, little-endian here
        b"\xfe\xff" + CHINESE.encode("utf-16-be"),
    ],
    ids=["utf-8", "utf-8-bom", "gb18030", "utf-16-le-bom", "utf-16-be-bom"],
)
def test_txt_encodings(data):
    document = extract("notes.txt", data)
    assert document.kind == "txt"
    assert document.sections == (Section("§1", CHINESE),)


def test_gb18030_is_not_mistaken_for_utf8():
    data = CHINESE.encode("gb18030")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")  # otherwise the test above proves nothing about the fallback
    assert "城市化" in extract("legacy.txt", data).text


def test_txt_runs_of_paragraphs_of_bounded_length():
    paragraphs = [f"Paragraph {i}. " + "evidence " * 60 for i in range(10)]  # ~555 chars each
    document = extract("long.txt", "\n\n\n\n".join(paragraphs).encode())
    assert labels(document) == ["§1", "§2", "§3", "§4", "§5"]
    assert all(len(section.text) <= SECTION_CHARS for section in document.sections)
    assert document.text.split("\n\n") == [p.strip() for p in paragraphs]  # blank-line runs collapsed


def test_txt_paragraph_longer_than_a_section_is_cut_at_sentences():
    sentence = "这是一句很长的中文句子，用来测试切分。"  # 19 characters, no spaces
    document = extract("wall.txt", (sentence * 200).encode())
    assert len(document.sections) > 1
    assert all(len(section.text) <= SECTION_CHARS for section in document.sections)
    assert all(section.text.endswith("。") for section in document.sections)
    assert "".join(section.text for section in document.sections) == sentence * 200


def test_pasted_or_uploaded_the_same_text_is_cut_the_same_way():
    """One chunker (`evidence.chunks`) for documents' sections and the pack's sources: a long
    paragraph with no line break is cut after a sentence, never mid-word, whether it is pasted as
    material or uploaded as a .txt, and every piece is the text as written."""
    sentences = [f"Claim {i} holds because the figures for year {2000 + i} say so." for i in range(80)]
    text = " ".join(sentences)  # ~4,800 characters, one line
    document = extract("claims.txt", text.encode())
    pasted = [source.excerpt for source in pack_from_options(text, []).sources]
    uploaded = [section.text for section in document.sections]
    assert pasted == uploaded and len(uploaded) > 1
    assert all(len(piece) <= SECTION_CHARS and piece.endswith("so.") and piece in text for piece in uploaded)
    assert " ".join(uploaded) == text


def test_a_heading_part_longer_than_a_source_is_cut_by_the_same_chunker():
    body = "\n\n".join(f"Paragraph {i}. " + "evidence " * 60 for i in range(6))
    document = extract("notes.md", f"# Findings\n\n{body}".encode())
    assert labels(document) == ["Findings"]  # a heading's part stays whole in the document…
    sources = pack_from_options("", [documents.as_option(document)]).sources
    assert [s.title for s in sources] == [f"notes.md · Findings ({n}/3)" for n in (1, 2, 3)]  # …and the pack cuts it
    assert [s.excerpt for s in sources] == chunks(document.sections[0].text)


# -- refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sheet.xlsx", "script.exe", "README", "archive.tar.gz"])
def test_unsupported_extension(name):
    assert refused(name, b"data") == f"{name}: only .txt, .md, .pdf and .docx are read."


def test_too_big():
    message = refused("huge.txt", b"a" * int(7.2 * 1024 * 1024))
    assert message.startswith("huge.txt is 7.2 MB; the limit is 5 MB")


def test_just_over_the_limit_does_not_read_as_the_limit():
    assert refused("edge.txt", b"a" * (MAX_BYTES + 1)).startswith("edge.txt is 5.1 MB;")
    assert extract("fits.txt", b"a" * MAX_BYTES).truncated  # at the limit it is read (and cut to MAX_CHARS)


@pytest.mark.parametrize("name", ["empty.txt", "empty.md", "empty.pdf", "empty.docx"])
def test_empty_file(name):
    assert refused(name, b"") == f"{name} is empty."


def test_whitespace_only_text_is_empty():
    assert refused("blank.txt", b" \n\n\t \r\n") == "blank.txt is empty."
    assert refused("invisible.txt", "\u200b\ufeff\u202e".encode()).startswith("invisible.txt has no text in it")


def test_undecodable_text():
    data = b"\x80\xff" * 100
    for encoding in ("utf-8", "gb18030"):
        with pytest.raises(UnicodeDecodeError):
            data.decode(encoding)
    message = refused("odd.txt", data)
    assert message.startswith("odd.txt is not in an encoding that can be read")
    assert "save it as UTF-8" in message


def test_binary_junk_with_nul_bytes_is_not_text():
    junk = bytes(range(256)) * 4
    assert refused("image.txt", junk).startswith("image.txt is not a text file")
    assert refused("image.md", b"GIF89a\x01\x00\x01\x00\x00\x00\x00").startswith("image.md is not a text file")


def test_broken_utf16_is_refused():
    assert "starts like UTF-16 text but is not" in refused("half.txt", b"\xff\xfea\x00b")


def test_extract_all_refuses_more_than_max_files():
    files = [(f"f{i}.txt", b"text") for i in range(MAX_FILES + 1)]
    with pytest.raises(DocumentError, match=f"At most {MAX_FILES} files"):
        extract_all(files)
    assert [document.name for document in extract_all(files[:MAX_FILES])] == [f"f{i}.txt" for i in range(MAX_FILES)]


def test_extract_all_stops_at_the_first_bad_file():
    with pytest.raises(DocumentError, match="^bad.pdf is not a PDF file"):
        extract_all([("good.txt", b"fine"), ("bad.pdf", b"not a pdf")])


# -- cleaning -------------------------------------------------------------------------------------


def test_control_and_invisible_characters_are_removed():
    raw = (
        "Zero\u200bwidth\u00a0kept\x1b[31m ESC\x07 bell\r\n"
        + "CRLF\u202eRLO\u2066\ufeffBOM\tTab\x85C1\n\n\n\n\nafter   \n"
    )
    document = extract("dirty.txt", raw.encode())
    assert document.text == "Zerowidth\u00a0kept[31m ESC bell\nCRLFRLOBOM\tTab\nC1\n\nafter"


def test_nul_is_removed_where_it_does_not_mark_a_binary_file():
    # In UTF-16 NUL is a character like any other; past the first 8 kB it is a stray byte, not a sign.
    assert extract("wide.txt", "a\x00b".encode("utf-16")).text == "ab"
    late = extract("late.txt", b"x" * 9000 + b"\x00y")
    assert "".join(section.text for section in late.sections) == "x" * 9000 + "y"


def test_invisible_characters_removed_from_pdf_and_docx_too():
    assert extract("d.docx", make_docx(["a\u200bb\u202ec"])).text == "abc"
    assert extract("p.pdf", make_pdf(["tab\x07bell"])).text == "tabbell"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("../../etc/passwd.txt", "passwd.txt"),
        ("C:\\Users\\me\\Desktop\\notes.md", "notes.md"),
        ("invoice\u202etxt.md", "invoicetxt.md"),
        ("  spaced\x00name.txt  ", "spacedname.txt"),
    ],
)
def test_file_name_is_sanitised(raw, clean):
    assert extract(raw, b"content").name == clean


def test_long_file_name_is_cut_keeping_the_extension():
    name = extract("a" * 300 + ".txt", b"content").name
    assert len(name) == 120
    assert name.endswith("a.txt")


def test_hidden_extension_trick_is_refused():
    # "report\u202efdp.exe" shows as "reportexe.pdf" in a bidi-aware view; it is an .exe
    assert refused("report\u202efdp.exe", b"MZ") == "reportfdp.exe: only .txt, .md, .pdf and .docx are read."


def test_max_chars_truncates_and_says_so():
    paragraph = "x" * 999 + "\n\n"  # 1,001 characters with the break
    document = extract("big.txt", (paragraph * 300).encode())  # ~300k characters
    assert document.truncated
    assert sum(len(section.text) for section in document.sections) == MAX_CHARS
    short = extract("small.txt", (paragraph * 3).encode())
    assert not short.truncated
    assert len(short.sections) == 3
