"""Small real documents for the upload tests, built in memory so no binary fixtures live in the repo.

`make_pdf` writes the PDF by hand (one Helvetica font, one content stream per page) so a test controls
exactly which pages carry text, including none; `make_docx` goes through python-docx, the same library
that reads the files back. The hostile ones of issue 24 (a zip bomb that lies about its size, a docx
python-docx's API reads in more than linear time, a PDF whose pages share one content stream) are
written byte by byte, as an attacker would.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import docx

_LINE_HEIGHT = 16
_TOP = 720  # a US Letter page is 792 points high; one inch of margin


def _pdf_string(text: str) -> bytes:
    r"""A PDF literal string body: `\`, `(` and `)` escaped, Latin-1 bytes."""
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return escaped.encode("latin-1")


def make_pdf(pages: list[str]) -> bytes:
    """A minimal valid PDF 1.4, one page per string, each line of it drawn on its own baseline.

    ASCII/Latin-1 text only: the font is the standard Helvetica with WinAnsiEncoding and no embedded
    glyphs, so anything outside Latin-1 cannot be written (and raises UnicodeEncodeError). An empty string
    gives a page with an empty content stream, a page without a text layer.
    """
    font_id = 3
    page_ids = [4 + 2 * i for i in range(len(pages))]
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [%s] /Count %d >>"
        % (b" ".join(b"%d 0 R" % page_id for page_id in page_ids), len(pages)),
        # WinAnsiEncoding, not the font's built-in StandardEncoding, so Latin-1 bytes read back as Latin-1.
        font_id: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    }
    for page_id, text in zip(page_ids, pages, strict=True):
        lines = text.split("\n") if text else []
        stream = b"\n".join(
            b"BT /F1 12 Tf 72 %d Td (%s) Tj ET" % (_TOP - i * _LINE_HEIGHT, _pdf_string(line))
            for i, line in enumerate(lines)
        )
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (font_id, page_id + 1)
        )
        objects[page_id + 1] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)

    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")  # the binary comment tells tools the file is not 7-bit text
    offsets: dict[int, int] = {}
    for obj_id in sorted(objects):
        offsets[obj_id] = out.tell()
        out.write(b"%d 0 obj\n%s\nendobj\n" % (obj_id, objects[obj_id]))
    xref_at = out.tell()
    size = max(objects) + 1
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % size)
    for obj_id in range(1, size):
        out.write(b"%010d 00000 n \n" % offsets[obj_id])  # every entry exactly 20 bytes
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref_at))
    return out.getvalue()


def make_docx(blocks: list[str | tuple[str, str] | list[list[str]]]) -> bytes:
    """A .docx of the blocks in order: a str is a paragraph, ("heading", text) a Heading 1, a list
    of rows (each a list of cell texts) a table."""
    document = docx.Document()
    for block in blocks:
        if isinstance(block, str):
            document.add_paragraph(block)
        elif isinstance(block, tuple):
            kind, text = block
            if kind != "heading":
                raise ValueError(f"unknown block kind {kind!r}")
            document.add_heading(text, level=1)
        else:
            columns = max((len(row) for row in block), default=0)
            table = document.add_table(rows=len(block), cols=columns)
            for row, cells in zip(table.rows, block, strict=True):
                for cell, text in zip(row.cells, cells, strict=False):
                    cell.text = text
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


# -- hostile documents (issue 24): what the sandbox and the parsers' budgets must refuse ---------------


def make_docx_bomb(real_bytes: int, claimed: int = 1_000) -> bytes:
    """A .docx whose word/document.xml inflates to `real_bytes` zeros while both of the zip's records
    of it (local header and central directory) say `claimed` bytes, with the CRC of the first
    `claimed` of them: zipfile's read() inflates all of it, cuts it to `claimed` and finds the CRC
    right. Written 1 MiB at a time, so not even a 1 GiB bomb is ever in memory here."""
    member = "word/document.xml"
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(make_docx(["bomb"]))) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            if info.filename != member:
                target.writestr(info.filename, source.read(info.filename), zipfile.ZIP_DEFLATED)
        bomb = zipfile.ZipInfo(member)
        bomb.compress_type = zipfile.ZIP_DEFLATED
        with target.open(bomb, "w") as inflated:
            block = bytes(1024 * 1024)
            for at in range(0, real_bytes, len(block)):
                inflated.write(block[: real_bytes - at])
    data = bytearray(out.getvalue())
    crc = zlib.crc32(bytes(min(claimed, real_bytes)))
    # (signature, where the name length is, where the name starts, where CRC and sizes are)
    for signature, length_at, name_at, crc_at, size_at in (
        (b"PK\x03\x04", 26, 30, 14, 22),
        (b"PK\x01\x02", 28, 46, 16, 24),
    ):
        at = data.find(signature)
        while at >= 0:
            (length,) = struct.unpack_from("<H", data, at + length_at)
            if data[at + name_at : at + name_at + length] == member.encode():
                struct.pack_into("<I", data, at + crc_at, crc)
                struct.pack_into("<I", data, at + size_at, claimed)
            at = data.find(signature, at + 4)
    return bytes(data)


_BODY = "<w:body>"


def make_slow_docx(paragraphs: int = 0, merged_rows: int = 0, empty_paragraphs: int = 0) -> bytes:
    """A .docx nothing is wrong with that python-docx's per-paragraph and per-row API made slow:
    `paragraphs` short paragraphs ("Line 1", ...), `empty_paragraphs` empty ones (blank lines,
    which compress to almost nothing), then a table of `merged_rows` rows whose first column is one
    cell merged down all of them (Word's "merge cells"), the second a number a row. Written as XML
    straight into the body: python-docx would take minutes to add them one by one."""
    body = "".join(f"<w:p><w:r><w:t>Line {i}</w:t></w:r></w:p>" for i in range(paragraphs))
    body += "<w:p/>" * empty_paragraphs
    if merged_rows:
        rows = []
        for i in range(merged_rows):
            merge = '<w:vMerge w:val="restart"/>' if i == 0 else "<w:vMerge/>"
            first = "<w:p><w:r><w:t>Merged</w:t></w:r></w:p>" if i == 0 else "<w:p/>"
            rows.append(
                f"<w:tr><w:tc><w:tcPr>{merge}</w:tcPr>{first}</w:tc>"
                f"<w:tc><w:p><w:r><w:t>{i}</w:t></w:r></w:p></w:tc></w:tr>"
            )
        body += "<w:tbl><w:tblGrid><w:gridCol/><w:gridCol/></w:tblGrid>" + "".join(rows) + "</w:tbl>"
    base = make_docx(["start"])
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(base)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = source.read(info.filename)
            if info.filename == "word/document.xml":
                content = content.decode().replace(_BODY, _BODY + body, 1).encode()
            target.writestr(info.filename, content)
    return out.getvalue()


def make_shared_stream_pdf(pages: int, content_bytes: int, op: bytes = b"BT /F1 12 Tf 72 700 Td ( ) Tj ET\n") -> bytes:
    """A PDF of `pages` pages that all draw one content stream: `op` repeated to `content_bytes`,
    deflated (a few KB), so each page makes a reader parse all of it again. The default operation
    shows a space: text operators to parse, no text to find."""
    content = zlib.compress(op * (content_bytes // len(op)), 9)
    page_ids = [5 + i for i in range(pages)]
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % p for p in page_ids), pages),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        4: b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(content), content),
    }
    for page_id in page_ids:
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
        )
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = {}
    for obj_id in sorted(objects):
        offsets[obj_id] = out.tell()
        out.write(b"%d 0 obj\n%s\nendobj\n" % (obj_id, objects[obj_id]))
    xref_at = out.tell()
    size = max(objects) + 1
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % size)
    for obj_id in range(1, size):
        out.write(b"%010d 00000 n \n" % offsets[obj_id])
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref_at))
    return out.getvalue()
