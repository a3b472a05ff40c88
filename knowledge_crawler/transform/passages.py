"""Passages: a page's content split by headings into bounded, stably named pieces.

Pure module (standard library only). The unit of retrieval (SPEC F-RETRIEVAL):
:func:`split_passages` cuts the stored markdown at its ``#`` headings; each
section is one passage, or several when it has more than ``max_words`` words,
cut between blocks (paragraphs, lists, tables, code blocks), then between
lines, then between sentences, and only as a last resort between words. The
text of a passage is the content's own text, word for word (a heading's line
goes into the passage's ``heading_path``, not its text), so the passages of a
page hold every word of it. A fenced code block is never cut open unless it
alone is over the limit, and then between its lines, each piece fenced again.

A passage's id is a hash of the source, the page's canonical URL, its heading
path and its text (and, for a repeated identical passage, which repetition it
is): the same text under the same headings of the same page keeps its id
across runs, whatever changed around it.

>>> [(p.heading_path, p.text) for p in split_passages("Intro.\\n\\n## Setup\\n\\nRun it.")]
[((), 'Intro.'), (('Setup',), 'Run it.')]
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["DEFAULT_MAX_WORDS", "Passage", "passage_id", "split_passages"]

#: the default longest passage, in words
DEFAULT_MAX_WORDS = 200

_HEADING = re.compile(r"(#{1,6}) (.*)")
_FENCE = re.compile(r"(`{3,}|~{3,})[^`]*")
_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


@dataclass(frozen=True, slots=True)
class Passage:
    """One passage of a page: its place, the headings above it and its text."""

    id: str
    ord: int  #: position on the page, from 0
    heading_path: tuple[str, ...]
    text: str
    word_count: int


def passage_id(
    source_id: str, canonical_url: str, heading_path: tuple[str, ...], text: str, repeat: int = 0
) -> str:
    """The stable id of a passage (32 hex digits of SHA-256)."""
    key = "\x1f".join(
        (source_id, canonical_url, json.dumps(list(heading_path), ensure_ascii=False), text)
    )
    if repeat:
        key += f"\x1f{repeat}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def split_passages(
    content: str,
    *,
    source_id: str = "",
    canonical_url: str = "",
    max_words: int = DEFAULT_MAX_WORDS,
) -> list[Passage]:
    """The passages of ``content`` (markdown as the extract stage writes it)."""
    if max_words < 1:
        raise ValueError(f"max_words must be >= 1, got {max_words}")
    passages: list[Passage] = []
    seen: dict[tuple[tuple[str, ...], str], int] = {}
    for path, blocks in _sections(content):
        for text, words in _pack(blocks, max_words):
            repeat = seen.get((path, text), 0)
            seen[(path, text)] = repeat + 1
            passages.append(
                Passage(
                    passage_id(source_id, canonical_url, path, text, repeat),
                    len(passages),
                    path,
                    text,
                    words,
                )
            )
    return passages


def _words(text: str) -> int:
    return len(_WORD.findall(text))


def _blocks(content: str) -> Iterator[str]:
    """Blocks separated by blank lines; a fenced code block is one block, blank lines and all."""
    current: list[str] = []
    fence = ""
    for line in content.split("\n"):
        if fence:
            current.append(line)
            m = _FENCE.fullmatch(line.strip())
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
            continue
        m = _FENCE.fullmatch(line.strip()) if line.lstrip().startswith(("```", "~~~")) else None
        if m:
            fence = m.group(1)
            current.append(line)
            continue
        if not line.strip():
            if current:
                yield "\n".join(current)
                current = []
            continue
        current.append(line)
    if current:
        yield "\n".join(current)


def _sections(content: str) -> Iterator[tuple[tuple[str, ...], list[str]]]:
    """(heading path, blocks) per section; a heading's own line is not a block."""
    stack: list[tuple[int, str]] = []
    blocks: list[str] = []
    for block in _blocks(content):
        m = _HEADING.fullmatch(block) if "\n" not in block else None
        if m is None:
            blocks.append(block)
            continue
        if blocks:
            yield tuple(text for _, text in stack), blocks
            blocks = []
        level = len(m.group(1))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, m.group(2).strip()))
    if blocks:
        yield tuple(text for _, text in stack), blocks


def _pack(blocks: list[str], max_words: int) -> Iterator[tuple[str, int]]:
    """Blocks joined into passages of at most ``max_words`` words where a cut is possible,
    each with its word count (words never span the whitespace that joins pieces, so a
    passage's count is the sum of its pieces')."""
    pieces: list[tuple[str, str, int]] = []  # (text, separator before it, its words)
    for block in blocks:
        words = _words(block)
        if words > max_words:
            parts = _cut(block, max_words)
            pieces.extend(
                (part, "\n\n" if i == 0 else "\n", _words(part)) for i, part in enumerate(parts)
            )
        else:
            pieces.append((block, "\n\n", words))
    current = ""
    count = 0
    for text, separator, words in pieces:
        if current and count + words > max_words:
            yield current, count
            current, count = "", 0
        current = f"{current}{separator}{text}" if current else text
        count += words
    if current:
        yield current, count


def _cut(block: str, max_words: int) -> list[str]:
    """A block over the limit, in pieces: code by its lines (each piece fenced again),
    anything else by lines, sentences, then words."""
    lines = block.split("\n")
    fence = _FENCE.fullmatch(lines[0].strip()) if len(lines) > 1 else None
    if fence and _FENCE.fullmatch(lines[-1].strip()):
        opening, closing = lines[0], lines[-1]
        return [f"{opening}\n{piece}\n{closing}" for piece in _group(lines[1:-1], "\n", max_words)]
    if len(lines) > 1:
        out: list[str] = []
        for piece in _group(lines, "\n", max_words):
            out.extend(_cut(piece, max_words) if _words(piece) > max_words else [piece])
        return out
    sentences = _SENTENCE_END.split(block)
    if len(sentences) > 1:
        out = []
        for piece in _group(sentences, " ", max_words):
            out.extend(_cut(piece, max_words) if _words(piece) > max_words else [piece])
        return out
    return _group(block.split(" "), " ", max_words)


def _group(parts: list[str], separator: str, max_words: int) -> list[str]:
    """Consecutive ``parts`` joined by ``separator`` into groups of at most ``max_words``
    words (a single part over the limit is a group of its own)."""
    groups: list[str] = []
    current: list[str] = []
    count = 0
    for part in parts:
        words = _words(part)
        if current and count + words > max_words:
            groups.append(separator.join(current))
            current, count = [], 0
        current.append(part)
        count += words
    if current:
        groups.append(separator.join(current))
    return groups
