"""Small real documents for the upload tests, built in memory so no binary fixtures live in the repo.

`make_pdf` writes the PDF by hand (one Helvetica font, one content stream per page) so a test controls
exactly which pages carry text, including none; `make_docx` goes through python-docx, the same library
that reads the files back.
"""

from __future__ import annotations

import io

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
