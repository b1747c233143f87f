"""Text out of uploaded documents (txt, md, pdf, docx) for a debate's evidence pack.

Each document comes back as labelled sections ("p. 3", a heading, "§2") so a speech can cite where a
claim came from. Uploads are untrusted: every limit is checked before the expensive step it guards
(size before parsing, the bytes a zip really inflates to before python-docx reads it, a PDF's page
content before pypdf parses it), and every failure is a `DocumentError` whose message tells the user
which file and what to do, never a traceback.

The web process never parses an upload itself: `extract_isolated` hands the bytes to a fresh
interpreter (`python -m debates.documents_sandbox`) that runs `extract` under CPU-time, memory and
output limits, so a document that would take minutes or gigabytes costs the child, which is refused
and killed, not the server. `extract` is the parse itself, in this process: the child's, and tests'.
No Django imports: the form passes the uploaded file's name and bytes.
"""

from __future__ import annotations

import io
import json
import logging
import math
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from debates.engine import i18n, optional
from debates.engine.evidence import EXCERPT_LIMIT, chunks
from debates.engine.i18n import gettext_noop, verbatim

if TYPE_CHECKING:  # pypdf and python-docx are imported by the readers that use them (`_parser`)
    from docx.document import Document as DocxDocument
    from docx.table import Table
    from pypdf import PdfReader

MAX_BYTES = 5 * 1024 * 1024
MAX_FILES = 5
MAX_CHARS = 200_000
EXTENSIONS = (".txt", ".md", ".pdf", ".docx")

MAX_NAME = 120
MAX_PDF_PAGES = 300
MAX_UNZIPPED = 50 * 1024 * 1024  # a real .docx is mostly XML and compresses ~10x; 5 MB in, 50 MB out
# pypdf parses a page's content stream in Python for its text, about 1.35 s of CPU a MB when the
# stream is all text operators (measured; pages of drawing without text are not parsed, and not
# counted). A dense page of text is 2-50 KB, and MAX_CHARS of text is reached long before 8 MB; a
# page that points at one shared 3 MB stream, 300 times over, is not: 8 MB is ~10 s at most.
MAX_PDF_CONTENT = 8 * 1024 * 1024
_INFLATE_CHUNK = 64 * 1024  # a zip member is inflated this much at a time while its real size is counted
SECTION_CHARS = EXCERPT_LIMIT  # a run of paragraphs short enough to quote as one source (`evidence.chunks`)
_MB = 1024 * 1024
_SNIFF = 8192

# Zero-width and bidi controls: invisible in the page but able to reorder or hide what a reader sees.
# The bidi isolates (U+2066-U+2069) belong with the embeddings and overrides (U+202A-U+202E).
_INVISIBLE = "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
# Every C0/C1 control but \t and \n (\r and the other line breaks are turned into \n first).
_JUNK = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")
_LINE_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x85\u2028\u2029]")
_BLANK_RUNS = re.compile(r"\n{3,}")
_MD_HEADING_START = re.compile(r" {0,3}#{1,6}(?:[ \t]+|$)")
_MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class DocumentError(ValueError):
    """An upload that cannot be read: which file, why, what to do. `str(error)` is English;
    `error.text.render(gettext)` the reader's language (the form shows that)."""

    def __init__(self, msgid: str, **params) -> None:
        self.text = i18n.text(msgid, **params)
        super().__init__(str(self.text))

    @classmethod
    def from_dict(cls, data: dict) -> DocumentError:
        """A refusal back from its stored form (`Text.as_dict()`), as the child process sends it."""
        text = i18n.Text.from_dict(data)
        return cls(text.msgid, **text.params)


@dataclass(frozen=True)
class Section:
    """One citable unit: a PDF page, a heading's part, or a run of paragraphs."""

    label: str
    text: str


@dataclass(frozen=True)
class Document:
    name: str
    kind: str  # "txt" | "md" | "pdf" | "docx"
    sections: tuple[Section, ...]
    truncated: bool = False  # text past MAX_CHARS (or PDF pages past MAX_PDF_PAGES) was left out

    @property
    def text(self) -> str:
        return "\n\n".join(section.text for section in self.sections)


def extract(name: str, data: bytes) -> Document:
    """The document's text in sections, parsed in this process; raises DocumentError for anything that
    is not readable text. An upload from a user goes through `extract_isolated`, which runs this in a
    child process under limits."""
    name, kind = _checked(name, data)
    sections, truncated = _READERS[kind](name, data)
    sections = [Section(label, text) for label, text in sections if text]
    if not sections:
        raise DocumentError(
            gettext_noop("%(name)s has no text in it; check that the right file was chosen."), name=name
        )
    sections, cut = _cap(sections, MAX_CHARS)
    return Document(name=name, kind=kind, sections=tuple(sections), truncated=truncated or cut)


def _checked(name: str, data: bytes) -> tuple[str, str]:
    """The cleaned name and the kind, once the checks that need no parsing pass (cheap: the web
    process makes them before it starts a child)."""
    name = clean_name(name)
    ext = name[name.rfind(".") :].lower() if "." in name else ""
    if ext not in EXTENSIONS:
        raise DocumentError(gettext_noop("%(name)s: only .txt, .md, .pdf and .docx are read."), name=name or "?")
    if len(data) > MAX_BYTES:
        size = math.ceil(len(data) * 10 / _MB) / 10  # rounded up, so 5 MB and a byte never reads "5.0 MB"
        raise DocumentError(
            gettext_noop("%(name)s is %(size)s MB; the limit is %(limit)d MB. Split it or paste its text."),
            name=name,
            size=f"{size:.1f}",
            limit=MAX_BYTES // _MB,
        )
    if not data.strip():
        raise DocumentError(gettext_noop("%(name)s is empty."), name=name)
    return name, ext[1:]


def extract_all(files: Iterable[tuple[str, bytes]]) -> list[Document]:
    """Every upload of one form, in order; the first unreadable file stops the lot."""
    files = list(islice(files, MAX_FILES + 1))  # never pull more than needed to know there are too many
    if len(files) > MAX_FILES:
        raise DocumentError(
            gettext_noop("At most %(count)d files can be added at once; remove some and try again."), count=MAX_FILES
        )
    return [extract(name, data) for name, data in files]


def clean_name(name: str) -> str:
    """The uploaded name as shown to users: no directory part (either slash, since browsers on
    Windows may send one), no control or invisible characters (a U+202E before "gpj.exe" makes it
    read "exe.jpg"), at most MAX_NAME characters with the extension kept."""
    name = re.split(r"[/\\]", name)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp")).strip()
    if len(name) > MAX_NAME:
        stem, dot, ext = name.rpartition(".")
        if dot and 0 < len(ext) < 10:
            name = stem[: MAX_NAME - len(ext) - 1].rstrip() + "." + ext
        else:
            name = name[:MAX_NAME]
    return name


def normalise(text: str) -> str:
    """One \\n per line break, no controls but \\t and \\n, no invisible or bidi characters, no
    trailing spaces, at most one blank line in a row."""
    text = _LINE_BREAKS.sub("\n", text)
    text = _JUNK.sub("", text)
    # Line by line, not `[ \t]+$` over the text: the regex tries every space of a run before a word
    # and scans the rest of the run from each, so a line of n spaces and a letter cost n² steps
    # (32,000 spaces: 2.6 s; the 5 MB an upload may be: days).
    text = "\n".join(line.rstrip(" \t") for line in text.split("\n"))
    return _BLANK_RUNS.sub("\n\n", text).strip()


# -- text ---------------------------------------------------------------------------------------------

_Sections = tuple[list[tuple[str, str]], bool]  # (label, text) pairs, and whether pages were left out


def _decode(name: str, data: bytes) -> str:
    """UTF-8 (BOM or not), UTF-16 with a BOM, then GB18030, the usual legacy encoding of Chinese text.

    GB18030 accepts many byte strings that are not text at all, so a NUL byte near the start (which
    no text file but UTF-16 has) is taken to mean a binary file before any decoding is tried."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise DocumentError(
                gettext_noop("%(name)s starts like UTF-16 text but is not; save it as UTF-8."), name=name
            ) from None
    if b"\x00" in data[:_SNIFF]:
        raise DocumentError(
            gettext_noop("%(name)s is not a text file; upload the text itself, or a PDF or .docx."), name=name
        )
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise DocumentError(
        gettext_noop("%(name)s is not in an encoding that can be read (UTF-8, UTF-16 or GB18030); save it as UTF-8."),
        name=name,
    )


def _read_txt(name: str, data: bytes) -> _Sections:
    return _numbered(chunks(normalise(_decode(name, data)))), False


def _read_md(name: str, data: bytes) -> _Sections:
    """One section per ATX heading ("## Results"); a `#` line inside a fenced code block is code."""
    parts: list[tuple[str | None, list[str]]] = [(None, [])]
    fence = ""
    for line in normalise(_decode(name, data)).split("\n"):
        opening = _MD_FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
        elif opening:
            fence = opening.group(1)
        elif (heading := _md_heading(line)) is not None:
            parts.append((heading.strip(), []))
            continue
        parts[-1][1].append(line)
    return _labelled((label, "\n".join(lines)) for label, lines in parts), False


def _md_heading(line: str) -> str | None:
    """The text of an ATX heading ("## Results", "## Results ##"), or None for any other line.

    In plain string steps: the regex this replaces (a lazy heading text before an optional closing
    run of #) retried the text at every length against the run of spaces after it, n² steps for a
    heading line of n spaces (16,000: 2.5 s; a 5 MB line: days)."""
    start = _MD_HEADING_START.match(line)
    if start is None:
        return None
    text = line[start.end() :].rstrip(" \t")
    unclosed = text.rstrip("#")
    if unclosed != text and unclosed[-1:] in (" ", "\t"):  # a closing run is set off by a space
        text = unclosed.rstrip(" \t")
    return text


# -- pdf ----------------------------------------------------------------------------------------------


def _read_pdf(name: str, data: bytes) -> _Sections:
    # Tolerate a few bytes before the header (the PDF spec allows up to 1 KB); anything else is not a PDF.
    if b"%PDF-" not in data[:1024]:
        raise DocumentError(
            gettext_noop("%(name)s is not a PDF file; check that the right file was chosen."), name=name
        )
    pypdf = _parser("pypdf", name, "PDF")
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not _open_with_empty_password(reader):
            raise DocumentError(
                gettext_noop("%(name)s is password-protected; save a copy without the password or paste its text."),
                name=name,
            )
        count = len(reader.pages)
    except DocumentError:
        raise
    except Exception as error:  # pypdf raises PdfReadError, but malformed files reach many others
        raise _unreadable(name, "pdf", error) from None

    sections: list[tuple[str, str]] = []
    failure: Exception | None = None
    truncated = count > MAX_PDF_PAGES
    read = content = 0  # characters of text so far; bytes of page content parsed for them
    for number in range(1, min(count, MAX_PDF_PAGES) + 1):
        if read > MAX_CHARS:  # `extract` keeps MAX_CHARS; the pages after it would be parsed for nothing
            truncated = True
            break
        try:
            page = reader.pages[number - 1]
            content += _text_content_bytes(page)
            if content > MAX_PDF_CONTENT:
                # Pages that share one stream are each parsed in full: count every page's own.
                if not any(text for _, text in sections):
                    raise DocumentError(
                        gettext_noop(
                            "%(name)s has more on its pages than can be read in time; save it again as a "
                            "smaller file or paste its text."
                        ),
                        name=name,
                    )
                truncated = True
                break
            text = page.extract_text() or ""
        except DocumentError:
            raise
        except Exception as error:  # one broken page should not cost the others
            if isinstance(error, MemoryError):
                raise _unreadable(name, "pdf", error) from None
            failure = failure or error
            continue
        sections.append((f"p. {number}", normalise(text)))
        read += len(sections[-1][1])
    if not any(text for _, text in sections):
        if failure is not None:
            raise _unreadable(name, "pdf", failure)
        raise DocumentError(gettext_noop("%(name)s has no text layer (a scan?); paste its text instead."), name=name)
    return sections, truncated


def _text_content_bytes(page) -> int:
    """How many bytes of content pypdf will parse to find the page's text: its content streams,
    inflated, when they hold a text operator (pypdf parses nothing else for text)."""
    from pypdf.generic import ArrayObject, StreamObject

    contents = page.get("/Contents")
    contents = contents.get_object() if contents is not None else None
    data = []
    for item in contents if isinstance(contents, ArrayObject) else [contents]:
        stream = item.get_object() if item is not None else None
        if isinstance(stream, StreamObject):
            data.append(stream.get_data())
    return sum(len(part) for part in data) if any(_has_text_operator(part) for part in data) else 0


def _has_text_operator(data: bytes) -> bool:
    """pypdf's own test for "this content can show text" (it parses only such content for text)."""
    try:
        from pypdf._text_extraction import _has_text_operator as has_text_operator
    except ImportError:  # a pypdf that moved it: count every page's content, which only over-counts
        return True
    return has_text_operator(data)


def _open_with_empty_password(reader: PdfReader) -> bool:
    """Many PDFs are encrypted only to restrict printing or copying and open with an empty password."""
    try:
        return bool(reader.decrypt(""))
    except Exception:  # an unsupported cipher, or a missing crypto library: as good as locked to us
        return False


# -- docx ---------------------------------------------------------------------------------------------


def _read_docx(name: str, data: bytes) -> _Sections:
    if data.startswith(b"\xd0\xcf\x11\xe0"):  # the OLE container of the old binary .doc
        raise DocumentError(
            gettext_noop("%(name)s is an old Word .doc file; save it as .docx or paste its text."), name=name
        )
    if not data.startswith(b"PK\x03\x04"):
        raise DocumentError(
            gettext_noop("%(name)s is not a Word .docx file; check that the right file was chosen."), name=name
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except Exception as error:
        raise _unreadable(name, "docx", error) from None
    declared = sum(info.file_size for info in members)
    if declared > MAX_UNZIPPED:
        raise DocumentError(
            gettext_noop(
                "%(name)s would unpack to %(size)d MB, more than a document needs; save it again or paste its text."
            ),
            name=name,
            size=declared // _MB,
        )
    # The declared sizes are the zip's word, not a bound: zipfile's read() inflates all of a member's
    # compressed bytes at once and only then cuts them to the declared size, so a member that says
    # 1,000 bytes and inflates to 1 GiB costs 1 GiB (2 GB at the peak). Count what really comes out.
    _check_inflated(name, data, members)
    docx = _parser("docx", name, "Word")
    try:
        document = docx.Document(io.BytesIO(data))
        blocks = list(_docx_blocks(document))
    except Exception as error:  # python-docx surfaces zip, XML and missing-part errors as they come
        raise _unreadable(name, "docx", error) from None

    parts: list[tuple[str | None, list[str]]] = [(None, [])]
    for heading, text in blocks:
        if heading:
            parts.append((text, []))
        else:
            parts[-1][1].append(text)
    return _labelled((label, "\n".join(lines)) for label, lines in parts), False


def _check_inflated(name: str, data: bytes, members: list[zipfile.ZipInfo]) -> None:
    """Inflate every member _INFLATE_CHUNK at a time, keeping none of it, and refuse the file once
    the bytes that really come out pass MAX_UNZIPPED. Reads the same compressed bytes that zipfile
    (and so python-docx) will: from the member's local header on, its central record's length."""
    total = 0
    for info in members:
        try:
            header = data[info.header_offset : info.header_offset + 30]
            if len(header) < 30 or not header.startswith(b"PK\x03\x04"):
                raise zipfile.BadZipFile(f"bad local header for {info.filename}")
            name_length, extra_length = struct.unpack("<HH", header[26:30])
            start = info.header_offset + 30 + name_length + extra_length
            compressed = memoryview(data)[start : start + info.compress_size]
            if info.compress_type == zipfile.ZIP_STORED:
                total += len(compressed)
            elif info.compress_type == zipfile.ZIP_DEFLATED:
                inflater = zlib.decompressobj(-15)  # raw deflate, as zipfile reads it
                at = 0
                pending = b""
                while not inflater.eof and total <= MAX_UNZIPPED:
                    if not pending and at < len(compressed):
                        pending, at = compressed[at : at + _INFLATE_CHUNK], at + _INFLATE_CHUNK
                    out = inflater.decompress(pending, _INFLATE_CHUNK)
                    total += len(out)
                    pending = inflater.unconsumed_tail
                    if not out and not pending and at >= len(compressed):  # all in, and nothing more out
                        break
            else:  # Word writes stored and deflated members only; bzip2 or lzma would need counting too
                raise zipfile.BadZipFile(f"{info.filename} uses compression method {info.compress_type}")
        except (zipfile.BadZipFile, zlib.error, struct.error) as error:
            raise _unreadable(name, "docx", error) from None
        if total > MAX_UNZIPPED:
            raise DocumentError(
                gettext_noop(
                    "%(name)s unpacks to more than %(limit)d MB (it says less), more than a document needs; "
                    "save it again or paste its text."
                ),
                name=name,
                limit=MAX_UNZIPPED // _MB,
            )


def _docx_blocks(document: DocxDocument) -> Iterator[tuple[bool, str]]:
    """(is_heading, text) for each paragraph and table row of the body, in reading order.

    Reads the XML itself where python-docx's own way costs more than linear time: a paragraph's
    `.style` searches all of the document's styles for the default on every call (~1 ms a paragraph
    with Word's ~160 styles: 40,000 short paragraphs, 45 s), and a row's `.cells` walks each
    vertically merged cell up to the top of its span, again for every row (a merged column of 400
    rows, 38 KB: 6 s; the steps grow with the square of the rows)."""
    from docx.table import Table

    headings = _heading_styles(document)
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            yield from ((False, row) for row in _table_rows(block))
        else:
            text = normalise(_paragraph_text(block._p))
            if text:
                style_id = block._p.style
                heading = headings.get(style_id) if style_id is not None else None
                yield (headings[None] if heading is None else heading), text


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"  # python-docx's qn("w:…")
_RUN_TAGS = frozenset({f"{_W}r", f"{_W}hyperlink"})


def _paragraph_text(p) -> str:
    """A w:p's text as python-docx's `Paragraph.text` joins it (its runs' and hyperlinks' text),
    without the XPath query it compiles for every paragraph (~25 us: 400,000 empty ones, 7 s)."""
    return "".join(child.text for child in p if child.tag in _RUN_TAGS)


def _heading_styles(document: DocxDocument) -> dict[str | None, bool | None]:
    """Style id -> whether a paragraph of that style is a heading (a "Heading n" or the "Title"
    style); None where python-docx would use the default paragraph style instead (an id that names
    no paragraph style), and under the key None whether that default is one. One pass over the
    styles, with python-docx's rules: the first style with an id wins, the last default counts."""
    from docx.enum.style import WD_STYLE_TYPE

    headings: dict[str | None, bool | None] = {None: False}
    for style in document.styles.element.style_lst:
        paragraph = style.type == WD_STYLE_TYPE.PARAGRAPH
        name = (style.name_val or "").lower() if paragraph else ""  # "heading 1" as stored, "Heading 1" shown
        heading = name.startswith("heading") or name == "title"
        if style.styleId is not None:
            headings.setdefault(style.styleId, heading if paragraph else None)
        if paragraph and style.default:
            headings[None] = heading
    return headings


def _table_rows(table: Table) -> Iterator[str]:
    """Each row's cells as "a | b", a merged cell once per row it spans (and once within the row),
    in one pass: the cell where a vertical merge starts is kept for its grid columns, and a cell
    that continues the merge in a later row reads that one."""
    above: dict[int, object] = {}  # grid column a cell starts at -> the w:tc whose text it shows
    for tr in table._tbl.tr_lst:
        here: dict[int, object] = {}
        column = tr.grid_before
        cells, seen = [], set()
        for tc in tr.tc_lst:
            # python-docx: a continuing cell is the one that starts at the same grid column above
            top = above.get(column, tc) if tc.vMerge == "continue" else tc
            here[column] = top
            column += tc.grid_span
            if top in seen:  # the top of a merge that also spans several columns: once a row
                continue
            seen.add(top)
            cells.append(" ".join("\n".join(_paragraph_text(p) for p in top.p_lst).split()))  # `_Cell.text`
        above = here
        if any(cells):
            yield " | ".join(cells)


# -- sections -----------------------------------------------------------------------------------------


def _labelled(parts: Iterable[tuple[str | None, str]]) -> list[tuple[str, str]]:
    """Heading parts keep their heading as label; text with no heading above it (a preamble, or a
    whole document without headings) is cut into numbered runs like a .txt."""
    sections: list[tuple[str, str]] = []
    numbered = 0
    for label, text in parts:
        text = normalise(text)
        label = " ".join((label or "").split())[:MAX_NAME]
        if not label:  # the preamble, or a heading with no words ("#" alone)
            runs = _numbered(chunks(text), start=numbered + 1)
            numbered += len(runs)
            sections.extend(runs)
        elif text:
            sections.append((label, text))
    return sections


def _numbered(pieces: Iterable[str], start: int = 1) -> list[tuple[str, str]]:
    return [(f"§{number}", piece) for number, piece in enumerate(pieces, start)]


def _cap(sections: list[Section], limit: int) -> tuple[list[Section], bool]:
    """At most `limit` characters of section text; the section that crosses it is cut."""
    kept: list[Section] = []
    left = limit
    for section in sections:
        if len(section.text) > left:
            if text := section.text[:left].rstrip():
                kept.append(Section(section.label, text))
            return kept, True
        kept.append(section)
        left -= len(section.text)
    return kept, False


MISSING_PARSER = gettext_noop(
    "%(name)s was not read: reading %(kind)s files needs the Python package %(package)s, which this server "
    "lacks. Whoever runs it can install it with: %(command)s"
)


def _parser(module: str, name: str, kind: str):
    """pypdf or python-docx, imported by the reader that needs it (in the child process), not when
    Django sets up: a server without one still reads the other kinds, and says what to install."""
    try:
        return optional.load(module)
    except optional.MissingPackage as missing:
        raise DocumentError(
            MISSING_PARSER, name=name, kind=kind, package=missing.package, command=optional.INSTALL
        ) from None


UNREADABLE = {
    "pdf": gettext_noop("%(name)s could not be read as a PDF: %(reason)s; save it again or paste its text."),
    "docx": gettext_noop("%(name)s could not be read as a Word document: %(reason)s; save it again or paste its text."),
}


def _unreadable(name: str, kind: str, error: Exception) -> DocumentError:
    if isinstance(error, MemoryError) or "memory allocation failed" in str(error).lower():  # lxml's words
        return DocumentError(TOO_MUCH_MEMORY, name=name)
    # strip: a KeyError's message comes quoted ("'There is no item named …'")
    reason = " ".join(str(error).split()).strip("'\"") or type(error).__name__
    if len(reason) > 100:
        reason = reason[:99].rstrip() + "…"
    return DocumentError(UNREADABLE[kind], name=name, reason=verbatim(reason))


_READERS: dict[str, Callable[[str, bytes], _Sections]] = {
    "txt": _read_txt,
    "md": _read_md,
    "pdf": _read_pdf,
    "docx": _read_docx,
}


# -- in a child process -------------------------------------------------------------------------------

TOO_SLOW = gettext_noop("%(name)s took too long to read; save it again as a smaller file or paste its text.")
TOO_MUCH_MEMORY = gettext_noop(
    "%(name)s uses too much memory when unpacked; save it again as a smaller file or paste its text."
)
CHILD_FAILED = gettext_noop("%(name)s could not be read; save it again or paste its text.")
BUSY = gettext_noop("%(name)s was not read: the server is reading other documents; try again in a minute.")


@dataclass(frozen=True)
class Limits:
    """What the child reading one upload may spend. Past any of them it is stopped and the upload
    refused; the web process only waits (on a thread of its own; the event loop goes on)."""

    # CPU seconds (RLIMIT_CPU; SIGXCPU, then SIGKILL a second later). The heaviest honest reads
    # measured: a docx of 45 MB of XML (MAX_UNZIPPED allows 50) 11 s, a PDF at MAX_PDF_CONTENT
    # ~10 s, ordinary files well under 1 s. The 40 KB docx took 48 s before its fix.
    cpu_seconds: int = 20
    # Wall clock, start-up included: the child runs at a lower priority (CHILD_NICE) and may wait
    # for a core while the server is busy; it is killed at this point whatever it was doing.
    wall_seconds: float = 45
    # Address space (RLIMIT_AS): the interpreter with lxml and pypdf maps ~60 MB; that 45 MB
    # document.xml peaked at 490 MB. The docx bomb of the issue took 2 GB of the web process.
    memory_bytes: int = 1024 * _MB
    # Any file the child writes (RLIMIT_FSIZE): its answer on stdout and its stderr. MAX_CHARS of
    # text is at most ~1.6 MB of JSON; labels add little for a real document.
    output_bytes: int = 8 * _MB


LIMITS = Limits()
CHILD_NICE = 10  # the web process's own threads come first for the CPU
# Children at once per web process (each may hold a core and `memory_bytes`): a second upload waits
# for a slot up to `wall_seconds`, then is refused as BUSY; a form's files are read one after another.
MAX_READERS = 2
_READING = threading.BoundedSemaphore(MAX_READERS)
_ROOT = Path(__file__).resolve().parent.parent  # where `debates` is importable from
_log = logging.getLogger(__name__)


def extract_isolated(name: str, data: bytes, limits: Limits = LIMITS) -> Document:
    """`extract` in a fresh interpreter (`python -m debates.documents_sandbox`) under `limits`: the
    bytes go in on its stdin, the sections come back as JSON on its stdout. What the parse costs
    (CPU, memory, a crash of a parser) is the child's; the refusals are the same DocumentErrors,
    plus TOO_SLOW, TOO_MUCH_MEMORY and CHILD_FAILED for a child that was stopped."""
    name, _ = _checked(name, data)  # the cheap refusals need no child
    if not _READING.acquire(timeout=limits.wall_seconds):
        raise DocumentError(BUSY, name=name)
    try:
        return _in_child(name, data, limits)
    finally:
        _READING.release()


def _in_child(name: str, data: bytes, limits: Limits) -> Document:
    # Files, not pipes: nothing to pump while waiting, and RLIMIT_FSIZE caps what the child writes.
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        stdin.write(data)
        stdin.seek(0)
        command = [sys.executable, "-m", "debates.documents_sandbox", name]
        command += [str(limits.cpu_seconds), str(limits.memory_bytes), str(limits.output_bytes), str(CHILD_NICE)]
        try:
            child = subprocess.run(  # a fresh interpreter: no fork of the web process and its threads
                command,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=_ROOT,
                env=_child_environment(),
                timeout=limits.wall_seconds,
                check=False,
            )
        except subprocess.TimeoutExpired:  # run() has killed it
            raise DocumentError(TOO_SLOW, name=name) from None
        stdout.seek(0)
        answer = stdout.read(limits.output_bytes + 1)
        stderr.seek(0)
        errors = stderr.read(limits.output_bytes).decode("utf-8", "replace")
    if child.returncode in (-signal.SIGXCPU, -signal.SIGKILL):  # the CPU limit, soft then hard
        raise DocumentError(TOO_SLOW, name=name)
    if child.returncode == 0 and len(answer) <= limits.output_bytes:
        try:
            outcome = _from_answer(json.loads(answer))
        except (ValueError, KeyError, TypeError) as error:
            errors = f"{errors}\nanswer not understood: {error}"
        else:
            if isinstance(outcome, DocumentError):
                raise outcome
            return outcome
    if "MemoryError" in errors:
        raise DocumentError(TOO_MUCH_MEMORY, name=name)
    _log.warning("reading %s: child exited %s: %s", name, child.returncode, errors[-2000:])
    raise DocumentError(CHILD_FAILED, name=name)


def _child_environment() -> dict[str, str]:
    """Only what the child needs: none of the server's secrets (API keys, SECRET_KEY) reach a parser."""
    path = os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "PYTHONPATH": path,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        "LC_ALL": "C.UTF-8",
    }


def to_answer(outcome: Document | DocumentError) -> dict:
    """The child's answer (JSON): the document, or the refusal as its msgid and parameters."""
    if isinstance(outcome, DocumentError):
        return {"error": outcome.text.as_dict()}
    return {"document": as_option(outcome)}


def _from_answer(answer: dict) -> Document | DocumentError:
    if "error" in answer:
        return DocumentError.from_dict(answer["error"])
    item = answer["document"]
    sections = tuple(Section(str(s["label"]), str(s["text"])) for s in item["sections"])
    return Document(str(item["name"]), str(item["kind"]), sections, bool(item["truncated"]))


def translated(error: DocumentError) -> str:
    """The error in the language of the request (Django's active translation)."""
    from django.utils.translation import gettext

    return error.text.render(gettext)


def as_option(document: Document) -> dict:
    """A document as a debate's options keep it (`CommonOptions.documents`)."""
    return {
        "name": document.name,
        "kind": document.kind,
        "truncated": document.truncated,
        "sections": [{"label": s.label, "text": s.text} for s in document.sections],
    }


def options_from_json(raw: str) -> list[dict]:
    """Documents read on an earlier post of the same form (carried in a hidden field, so the
    page that asks to confirm the roles does not lose them), checked as strictly as an upload:
    it comes back from the browser."""
    try:
        items = json.loads(raw)
    except ValueError:
        items = None
    if not isinstance(items, list) or len(items) > MAX_FILES:
        raise DocumentError(gettext_noop("The documents read before were lost on the way: choose the files again."))
    kept = []
    for item in items:
        sections = item.get("sections") if isinstance(item, dict) else None
        if not isinstance(sections, list) or item.get("kind") not in {e[1:] for e in EXTENSIONS}:
            raise DocumentError(gettext_noop("The documents read before were lost on the way: choose the files again."))
        parts = [
            Section(" ".join(str(s.get("label", "")).split())[:MAX_NAME], normalise(str(s.get("text", ""))))
            for s in sections
            if isinstance(s, dict)
        ]
        parts, cut = _cap([p for p in parts if p.text], MAX_CHARS)
        name = clean_name(str(item.get("name", ""))) or "?"
        kept.append(as_option(Document(name, item["kind"], tuple(parts), bool(item.get("truncated")) or cut)))
    return kept
