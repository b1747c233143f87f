"""Thinking written into the content: `<think>...</think>` split from the answer as it streams.

A reasoning model behind a server without a reasoning parser (Ollama, llama.cpp with
`--reasoning-format none`, vLLM without `--reasoning-parser`) writes its thinking into the content,
between `<think>` and `</think>`, before the answer. `ThinkSplitter` takes the content piece by
piece, as the chunks cut it, and hands back `(is_thinking, text)` pieces: whatever the chunking,
the thinking and the answer come out the same (tags split across chunks are held back until they
are whole). Pure: no I/O, no clock.

The rules:
  - `<think>` opens thinking only at the start of the content (after whitespace) or right after
    a `</think>`: a `<think>` in the middle of an answer is the answer's own text.
  - The first `</think>` closes it; the whitespace after `</think>` is dropped.
  - An unclosed `<think>` at the end: everything after it was thinking (the model ran out of
    tokens, or the server cut it).
  - `implicit`: the prompt already opened the thinking (DeepSeek-R1 distills' and Qwen3-Thinking's
    chat templates end with `<think>`), so the content starts inside it and only `</think>` comes.
    The content is then held back until `</think>` (everything before it was thinking) or the
    end (there was none: all of it is answer, or thinking if the reply was cut at its length).
  - Without `implicit`, a `</think>` in an answer that opened with none is dropped and
    `bare_close` set, so the caller can start the next reply `implicit`: the text before it
    has already gone out as answer.
"""

from __future__ import annotations

OPEN = "<think>"
CLOSE = "</think>"

Piece = tuple[bool, str]  # (is_thinking, text)


def _partial_suffix(text: str, tag: str) -> int:
    """The length of the longest end of `text` that is the beginning of `tag` (but not all of it)."""
    for size in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


class ThinkSplitter:
    """Splits streamed content into thinking and answer. See the module docstring."""

    def __init__(self, *, implicit: bool = False) -> None:
        self.implicit = implicit
        self.state = "start"  # start | after | think | hold | text
        self.buffer = ""
        self.seen_think = False  # a thinking block opened (or was implied) and closed
        self.bare_close = False  # a `</think>` came without a `<think>` before it

    @property
    def thinking_open(self) -> bool:
        """Inside thinking that has not closed (or, `implicit`, still unresolved)."""
        return self.state in ("think", "hold")

    def feed(self, piece: str) -> list[Piece]:
        self.buffer += piece
        out: list[Piece] = []
        self._run(out, final=False, truncated=False)
        return out

    def close(self, *, truncated: bool = False) -> list[Piece]:
        """The rest, at the end of the stream. `truncated`: the reply was cut at its length, so
        held-back content that never reached `</think>` was thinking, not an answer."""
        out: list[Piece] = []
        self._run(out, final=True, truncated=truncated)
        return out

    @staticmethod
    def _emit(out: list[Piece], thinking: bool, text: str) -> None:
        if not text:
            return
        if out and out[-1][0] == thinking:
            out[-1] = (thinking, out[-1][1] + text)
        else:
            out.append((thinking, text))

    def _run(self, out: list[Piece], *, final: bool, truncated: bool) -> None:
        while True:
            state, buffer = self.state, self.buffer
            if state in ("start", "after"):
                rest = buffer.lstrip()
                if not rest:
                    if state == "after":
                        self.buffer = ""  # whitespace after `</think>` is dropped
                    elif final:
                        self._emit(out, False, buffer)
                        self.buffer = ""
                    return
                if rest.startswith(OPEN):
                    self.state, self.buffer = "think", rest[len(OPEN) :]
                    continue
                if OPEN.startswith(rest) and not final:
                    return  # maybe a `<think>` not yet whole
                if state == "start" and self.implicit:
                    self.state = "hold"
                    continue
                self.state = "text"
                self.buffer = rest if state == "after" else buffer
                continue
            if state in ("think", "hold"):
                at = buffer.find(CLOSE)
                if at >= 0:
                    self._emit(out, True, buffer[:at])
                    self.state, self.buffer, self.seen_think = "after", buffer[at + len(CLOSE) :], True
                    continue
                if state == "hold":
                    if final:
                        self._emit(out, truncated, buffer)
                        self.buffer = ""
                    return
                keep = 0 if final else _partial_suffix(buffer, CLOSE)
                self._emit(out, True, buffer[: len(buffer) - keep])
                self.buffer = buffer[len(buffer) - keep :]
                return
            # text
            if self.seen_think or self.bare_close:
                self._emit(out, False, buffer)
                self.buffer = ""
                return
            at = buffer.find(CLOSE)
            if at >= 0:  # thinking the prompt opened, already passed on as answer: drop the tag
                self._emit(out, False, buffer[:at])
                self.state, self.buffer, self.bare_close = "after", buffer[at + len(CLOSE) :], True
                continue
            keep = 0 if final else _partial_suffix(buffer, CLOSE)
            self._emit(out, False, buffer[: len(buffer) - keep])
            self.buffer = buffer[len(buffer) - keep :]
            return


def split_thinking(text: str, *, implicit: bool = False, truncated: bool = False) -> tuple[str, str]:
    """(thinking, answer) of a whole content string, as `ThinkSplitter` would stream it."""
    splitter = ThinkSplitter(implicit=implicit)
    pieces = splitter.feed(text) + splitter.close(truncated=truncated)
    thinking = "".join(t for is_thinking, t in pieces if is_thinking)
    answer = "".join(t for is_thinking, t in pieces if not is_thinking)
    return thinking, answer


# -- a grammar that lets the model think first ------------------------------------------------------

ANSWER_RULE = "agora-answer"
# The thinking before the answer, in llama.cpp's GBNF: an optional `<think>` (a template may have
# opened it in the prompt), any text up to the first `</think>` (a small automaton: t<n> has
# matched n characters of `</think>`), and the whitespace after it. Free: no grammar rule of the
# answer applies inside it.
THINK_RULES = r"""agora-think ::= "<think>"? agora-t0 [ \t\r\n]*
agora-t0 ::= [^<] agora-t0 | "<" agora-t1
agora-t1 ::= [^/<] agora-t0 | "<" agora-t1 | "/" agora-t2
agora-t2 ::= [^t<] agora-t0 | "<" agora-t1 | "t" agora-t3
agora-t3 ::= [^h<] agora-t0 | "<" agora-t1 | "h" agora-t4
agora-t4 ::= [^i<] agora-t0 | "<" agora-t1 | "i" agora-t5
agora-t5 ::= [^n<] agora-t0 | "<" agora-t1 | "n" agora-t6
agora-t6 ::= [^k<] agora-t0 | "<" agora-t1 | "k" agora-t7
agora-t7 ::= [^><] agora-t0 | "<" agora-t1 | ">"
"""


def _rename_root(grammar: str) -> str:
    """`grammar` with its rule `root` (definition and references) named ANSWER_RULE; string
    literals, character classes and comments are left as they are."""
    out: list[str] = []
    i, n = 0, len(grammar)
    while i < n:
        ch = grammar[i]
        if ch in '"[':
            close = '"' if ch == '"' else "]"
            j = i + 1
            while j < n and grammar[j] != close:
                j += 2 if grammar[j] == "\\" else 1
            out.append(grammar[i : j + 1])
            i = j + 1
        elif ch == "#":
            j = grammar.find("\n", i)
            j = n if j < 0 else j
            out.append(grammar[i:j])
            i = j
        elif ch.isalnum() or ch in "-_":
            j = i
            while j < n and (grammar[j].isalnum() or grammar[j] in "-_"):
                j += 1
            word = grammar[i:j]
            out.append(ANSWER_RULE if word == "root" else word)
            i = j
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def grammar_after_thinking(grammar: str) -> str:
    """A GBNF grammar whose `root` is the thinking (free, closed by `</think>`; or none) and then
    the given grammar: llama.cpp applies a request's grammar from the first token it samples, so
    a thinking model held to its answer's grammar could not think (the thinking would have to
    match the answer's rules). The server's reasoning parser then takes the thinking out of the
    answer as usual."""
    return f"root ::= agora-think? {ANSWER_RULE}\n{THINK_RULES}{_rename_root(grammar)}"
