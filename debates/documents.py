"""Text out of uploaded documents (txt, md, pdf, docx) for a debate's evidence pack.

Each document comes back as labelled sections ("p. 3", a heading, "§2") so a speech can cite where a
claim came from. Uploads are untrusted: every limit is checked before the expensive step it guards
(size before parsing, the zip's declared size before python-docx inflates it), and every failure is
a `DocumentError` whose message tells the user which file and what to do, never a traceback.
No Django imports: the form passes the uploaded file's name and bytes.
"""

from __future__ import annotations

import io
import math
import re
import unicodedata
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice

import docx
from docx.document import Document as DocxDocument
from docx.table import Table
from pypdf import PdfReader

from debates.engine import i18n
from debates.engine.i18n import gettext_noop, verbatim

MAX_BYTES = 5 * 1024 * 1024
MAX_FILES = 5
MAX_CHARS = 200_000
EXTENSIONS = (".txt", ".md", ".pdf", ".docx")

MAX_NAME = 120
MAX_PDF_PAGES = 300
MAX_UNZIPPED = 50 * 1024 * 1024  # a real .docx is mostly XML and compresses ~10x; 5 MB in, 50 MB out
SECTION_CHARS = 1_500  # a run of paragraphs short enough to quote as one source
_MB = 1024 * 1024
_SNIFF = 8192

# Zero-width and bidi controls: invisible in the page but able to reorder or hide what a reader sees.
# The bidi isolates (U+2066-U+2069) belong with the embeddings and overrides (U+202A-U+202E).
_INVISIBLE = "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
# Every C0/C1 control but \t and \n (\r and the other line breaks are turned into \n first).
_JUNK = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")
_LINE_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x85\u2028\u2029]")
_TRAILING_SPACE = re.compile(r"[ \t]+$", re.MULTILINE)
_BLANK_RUNS = re.compile(r"\n{3,}")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$|^ {0,3}(#{1,6})[ \t]*$")
_MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"[。！？；]|[.!?;](?=\s)")  # "3.5" is not a sentence end


class DocumentError(ValueError):
    """An upload that cannot be read: which file, why, what to do. `str(error)` is English;
    `error.text.render(gettext)` the reader's language (the form shows that)."""

    def __init__(self, msgid: str, **params) -> None:
        self.text = i18n.text(msgid, **params)
        super().__init__(str(self.text))


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
    """The document's text in sections; raises DocumentError for anything that is not readable text."""
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
    kind = ext[1:]
    sections, truncated = _READERS[kind](name, data)
    sections = [Section(label, text) for label, text in sections if text]
    if not sections:
        raise DocumentError(
            gettext_noop("%(name)s has no text in it; check that the right file was chosen."), name=name
        )
    sections, cut = _cap(sections, MAX_CHARS)
    return Document(name=name, kind=kind, sections=tuple(sections), truncated=truncated or cut)


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
    text = _TRAILING_SPACE.sub("", text)
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
    return _numbered(_chunks(normalise(_decode(name, data)))), False


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
        elif heading := _MD_HEADING.match(line):
            parts.append(((heading.group(2) or "").strip(), []))
            continue
        parts[-1][1].append(line)
    return _labelled((label, "\n".join(lines)) for label, lines in parts), False


# -- pdf ----------------------------------------------------------------------------------------------


def _read_pdf(name: str, data: bytes) -> _Sections:
    # Tolerate a few bytes before the header (the PDF spec allows up to 1 KB); anything else is not a PDF.
    if b"%PDF-" not in data[:1024]:
        raise DocumentError(
            gettext_noop("%(name)s is not a PDF file; check that the right file was chosen."), name=name
        )
    try:
        reader = PdfReader(io.BytesIO(data))
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
    for number in range(1, min(count, MAX_PDF_PAGES) + 1):
        try:
            text = reader.pages[number - 1].extract_text() or ""
        except Exception as error:  # one broken page should not cost the others
            failure = failure or error
            continue
        sections.append((f"p. {number}", normalise(text)))
    if not any(text for _, text in sections):
        if failure is not None:
            raise _unreadable(name, "pdf", failure)
        raise DocumentError(gettext_noop("%(name)s has no text layer (a scan?); paste its text instead."), name=name)
    return sections, count > MAX_PDF_PAGES


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
            unzipped = sum(info.file_size for info in archive.infolist())
    except Exception as error:
        raise _unreadable(name, "docx", error) from None
    # Python's zipfile stops inflating a member at its declared size, so the declared total is a bound.
    if unzipped > MAX_UNZIPPED:
        raise DocumentError(
            gettext_noop(
                "%(name)s would unpack to %(size)d MB, more than a document needs; save it again or paste its text."
            ),
            name=name,
            size=unzipped // _MB,
        )
    try:
        blocks = list(_docx_blocks(docx.Document(io.BytesIO(data))))
    except Exception as error:  # python-docx surfaces zip, XML and missing-part errors as they come
        raise _unreadable(name, "docx", error) from None

    parts: list[tuple[str | None, list[str]]] = [(None, [])]
    for heading, text in blocks:
        if heading:
            parts.append((text, []))
        else:
            parts[-1][1].append(text)
    return _labelled((label, "\n".join(lines)) for label, lines in parts), False


def _docx_blocks(document: DocxDocument) -> Iterator[tuple[bool, str]]:
    """(is_heading, text) for each paragraph and table row of the body, in reading order."""
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            for row in block.rows:
                cells, seen = [], set()
                for cell in row.cells:
                    if id(cell._tc) in seen:  # a merged cell is listed once per grid column it spans
                        continue
                    seen.add(id(cell._tc))
                    cells.append(" ".join(cell.text.split()))
                if any(cells):
                    yield False, " | ".join(cells)
        else:
            text = normalise(block.text)
            style = (block.style.name if block.style is not None else "") or ""
            is_heading = style.lower().startswith("heading") or style.lower() == "title"
            if text:
                yield is_heading, text


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
            runs = _numbered(_chunks(text), start=numbered + 1)
            numbered += len(runs)
            sections.extend(runs)
        elif text:
            sections.append((label, text))
    return sections


def _numbered(chunks: Iterable[str], start: int = 1) -> list[tuple[str, str]]:
    return [(f"§{number}", chunk) for number, chunk in enumerate(chunks, start)]


def _chunks(text: str, limit: int = SECTION_CHARS) -> list[str]:
    """Paragraphs packed into runs of at most `limit` characters; a longer paragraph is cut at line
    ends, then sentence ends, then spaces, and only as a last resort mid-word."""
    chunks: list[str] = []
    current = ""
    for paragraph in _PARAGRAPH_BREAK.split(text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        pieces = [paragraph] if len(paragraph) <= limit else _split(paragraph, limit)
        for piece in pieces:
            if current and len(current) + 2 + len(piece) > limit:
                chunks.append(current)
                current = ""
            current = f"{current}\n\n{piece}" if current else piece
    if current:
        chunks.append(current)
    return chunks


def _split(paragraph: str, limit: int) -> list[str]:
    pieces: list[str] = []
    current = ""
    for line in paragraph.split("\n"):
        while len(line) > limit:
            cut = _cut_at(line[:limit])
            if current:
                pieces.append(current)
                current = ""
            pieces.append(line[:cut].rstrip())
            line = line[cut:].lstrip()
        if current and len(current) + 1 + len(line) > limit:
            pieces.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        pieces.append(current)
    return [piece for piece in pieces if piece]


def _cut_at(head: str) -> int:
    """Where to end a piece that cannot hold all of `head`: the last sentence end, else the last space,
    in its second half (a cut earlier makes tiny pieces), else the end of `head`, mid-word."""
    half = len(head) // 2
    ends = [match.end() for match in _SENTENCE_END.finditer(head, half)]
    if ends:
        return ends[-1]
    space = head.rfind(" ", half)
    return space + 1 if space > 0 else len(head)


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


UNREADABLE = {
    "pdf": gettext_noop("%(name)s could not be read as a PDF: %(reason)s; save it again or paste its text."),
    "docx": gettext_noop("%(name)s could not be read as a Word document: %(reason)s; save it again or paste its text."),
}


def _unreadable(name: str, kind: str, error: Exception) -> DocumentError:
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
    import json

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
