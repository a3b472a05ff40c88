r"""Text cleaning applied after extraction and before hashing (SPEC F-PIPELINE step 2).

Pure module. Cleaning never changes what a page says: it removes script/style
leftovers that stand on lines of their own (a tag quoted in a sentence is the page's
text), standalone boilerplate banners and the source's own ``boilerplate``
matches, and normalises whitespace, and nothing else. In particular:

* **Fenced code is never touched** (```` ``` ```` or ``~~~`` fences of any length and
  indentation, since a block under a list item is indented as the item's text; an
  unclosed fence runs to the end of the text): indentation,
  blank lines, inner spaces, banner-like lines and ``<script>`` examples inside it are
  kept byte for byte, whatever the fence's info string says. A block labelled
  ``javascript`` or ``css`` is a page's own code example: the extractor removes
  ``<script>`` and ``<style>`` elements before it renders anything, so a fence is
  always content.
* **Leading indentation is kept on every line**, so nested list items (two spaces per
  level in our markdown, ``  - child``) keep their depth; table rows (lines starting
  with ``|``, or holding a tab as in the plain-text form) keep their inner spacing.
* **Default banners** (:data:`DEFAULT_BOILERPLATE`) remove a whole *block* (lines
  between blank lines) or a whole *line*, never part of one, and only a short one:
  the block or line must be at most :data:`BANNER_MAX_WORDS` words and match a rule
  from its first word to its last (markdown ``#``, ``-``, ``1.``, ``>`` markers
  ignored). A paragraph that merely mentions cookies, copyright or a newsletter stays;
  so do "Out of stock" and "Price: $59.00", so real changes still move the hash.

Source patterns (a source's ``boilerplate`` regexes) are matched **per line**: each is
applied with ``re.MULTILINE`` added, however it was compiled (its other flags are
kept), to the text outside fenced code, and a match removes exactly the matched text.
Write ``^...$`` to remove whole lines; the line's newline stays, so a removed line
reads as a paragraph break:

>>> import re
>>> clean_text("Lamps\nShare this\nThe Aura lamp is bright.", [re.compile("^Share this$")])
'Lamps\n\nThe Aura lamp is bright.'
>>> clean_text("Please Share this page", [re.compile("^Share this$")])
'Please Share this page'

Whitespace outside code: trailing whitespace goes, NBSP becomes a space, runs of blank
lines become one, leading and trailing blank lines go, and runs of spaces inside a
line (after its indentation, outside table rows) become one space. The result is
idempotent: ``clean_text(clean_text(x)) == clean_text(x)`` for the default rules.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "BANNER_MAX_WORDS",
    "DEFAULT_BOILERPLATE",
    "Cleaned",
    "clean",
    "clean_text",
    "word_count",
]

#: A default banner is at most this many ``\w+`` words. Real banners are short ("Skip to
#: content", "© 2024 Example Inc. All rights reserved.", "We use cookies to improve your
#: experience. Accept all cookies / Reject" is 12); a block past this is somebody's text
#: even when it starts like a banner. Longer banners are the extractor's job (it drops
#: them by their markup) or a source's own ``boilerplate`` pattern's.
BANNER_MAX_WORDS = 25

# Words that make a "we use cookies" sentence a consent notice rather than prose about
# cookies (a banner asks, explains its settings or points at its policy).
_CONSENT_CUES = (
    r"accept|agree|consent|reject|decline|allow|opt[ -]?out|got it|ok|okay|settings"
    r"|preferences|manage|customi[sz]e|(?:privacy|cookie) (?:policy|notice|statement)"
    r"|learn more|more info(?:rmation)?|find out more|read more"
    r"|by (?:continuing|using|browsing|clicking|staying)|continu(?:e|ing) to (?:use|browse)"
    r"|(?:best|better|improve|enhance|personali[sz]e)\w* (?:your |the |our )?"
    r"(?:browsing |user |online )?experience"
)
_BUTTON_WORDS = (
    r"reject|decline|deny|refuse|settings|preferences|options|manage|customi[sz]e|necessary"
    r"|essential|only|all|cookies?|ok|okay|close|more|info|information|learn|policy|privacy"
)

#: Standalone banners, matched (case-insensitively) against a whole block or line with
#: :meth:`re.Pattern.fullmatch`, after markdown markers are dropped and whitespace is
#: collapsed, and only when it has at most :data:`BANNER_MAX_WORDS` words.
DEFAULT_BOILERPLATE: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # skip links
        r"(?:skip|jump) to (?:the )?(?:main )?(?:content|navigation|menu)\W*",
        # cookie notices: "We use cookies to improve your experience. Accept ..."
        r"(?:we|this (?:web ?)?site|our (?:web ?)?site|this page|[\w-]+(?:\.[\w-]+)+)"
        r" (?:uses?|may use|is using|are using) cookies\b"
        rf"(?=.*\b(?:{_CONSENT_CUES})\b).*",
        # consent buttons: "Accept all cookies / Reject", "Allow cookies Settings"
        rf"(?:accept|allow)(?: all)? cookies(?:\W+(?:{_BUTTON_WORDS}))*\W*",
        # newsletter boxes
        r"(?:subscribe|sign[ -]?up|join|register) (?:to|for) (?:our|the|my)"
        r" (?:[\w-]+ ){0,2}newsletters?\b.*",
        # copyright footers: "© ...", "Copyright 2024 ...", "(c) 2024 ..."
        r"(?:©|&copy;|copyright\s*(?:©|\(c\))|(?:copyright|\(c\))\s*(?=(?:19|20)\d\d)).*",
        r"copyright\b.*\ball rights reserved\b.*",
        r"all rights reserved\W*",
        # render-time footers: "Page generated at 14:32:07"
        r"page (?:was )?generated (?:at|in|on)\b.*",
    )
)

#: Words one of which every banner the rules above match holds (lower-cased): a block
#: without any is no banner, nor is any of its lines, and is not looked at further.
#: (A banner spelled with other letters that case-insensitive matching would equate,
#: such as a long s, is then kept: cleaning errs on the side of the page's text.)
_BANNER_WORDS = (
    "skip", "jump", "cookie", "newsletter", "©", "&copy;", "copyright", "(c)", "reserved",
    "generated",
)  # fmt: skip

#: the rules above as one pattern: one ``fullmatch`` tries them all (an alternation
#: full-matches exactly when one of its alternatives does)
_ANY_BANNER = re.compile(
    "|".join(f"(?:{rule.pattern})" for rule in DEFAULT_BOILERPLATE), re.IGNORECASE
)

#: a script or style leftover: lines of their own, from the opening tag to its closing
#: one, within one block (no blank line inside). A tag quoted in a sentence ("add
#: <script src=...></script> to the head") is what the page says, and stays. A no-break
#: space around it counts as the space it becomes (else a second pass would remove it).
_SCRIPT_STYLE = re.compile(
    r"^[ \t\u00a0]*<(script|style|noscript)\b(?:(?!</\1\s*>|\n[ \t]*\n).)*</\1\s*>[ \t\u00a0]*$",
    re.IGNORECASE | re.DOTALL | re.MULTILINE,
)
#: any indentation: a fence under a list item is indented as the item's text
_FENCE_OPEN = re.compile(r"[ \u00a0]*(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r"[ \u00a0]*(`{3,}|~{3,})\s*")
_LIST_MARKER = re.compile(r"[ \t]*(?:(?:#{1,6}|[-*+]|\d{1,9}[.)])[ \t]+|>[ \t]?)*")
_SPACES = re.compile(r" {2,}")
_WORD = re.compile(r"\w+")
#: Leftover removal can expose new leftovers ("<scr<style></style>ipt>"); bounded.
_MAX_LEFTOVER_ROUNDS = 8


@dataclass(frozen=True, slots=True)
class Cleaned:
    """What :func:`clean` kept and what it removed."""

    text: str
    """The cleaned text (what :func:`clean_text` returns)."""
    banners: tuple[str, ...] = ()
    """Standalone blocks or lines removed by :data:`DEFAULT_BOILERPLATE`, in order."""
    matched: tuple[str, ...] = ()
    """Non-empty text removed by the source's own patterns, in order."""


def clean_text(text: str, patterns: Iterable[re.Pattern[str]] = ()) -> str:
    """Strip boilerplate and normalise whitespace; idempotent; never touches code.

    >>> clean_text("Aura Desk Lamp\\n$49.00\\n© store.example.com. Page generated at 14:32:07.")
    'Aura Desk Lamp\\n$49.00'
    >>> clean_text("```\\ndef f():\\n    if x:\\n        return 1\\n```")
    '```\\ndef f():\\n    if x:\\n        return 1\\n```'
    >>> clean_text("- parent\\n  - child   item\\n\\n\\n\\nSkip to content")
    '- parent\\n  - child item'
    """
    return clean(text, patterns).text


def clean(text: str, patterns: Iterable[re.Pattern[str]] = ()) -> Cleaned:
    """:func:`clean_text`, also reporting the banners and pattern matches it removed."""
    text = _strip_leftovers(text)
    matched: list[str] = []
    compiled = [_per_line(p) for p in patterns]
    if compiled:
        text = _apply_patterns(text, compiled, matched)
    banners: list[str] = []
    return Cleaned(_normalise(text, banners), tuple(banners), tuple(matched))


@lru_cache(maxsize=256)
def _per_line(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` with ``re.MULTILINE`` added (other flags kept), compiled once."""
    if pattern.flags & re.MULTILINE:
        return pattern
    return re.compile(pattern.pattern, pattern.flags | re.MULTILINE)


# --------------------------------------------------------------------------- fences


@dataclass(frozen=True, slots=True)
class _Segment:
    code: bool
    lines: list[str]
    closed: bool = False  # code: has a closing fence
    info: str = ""  # code: the opening fence's info string


def _segments(lines: list[str]) -> Iterator[_Segment]:
    """Split lines into prose runs and fenced code blocks (fence lines included)."""
    n = len(lines)
    i = prose_start = 0
    while i < n:
        m = _FENCE_OPEN.fullmatch(lines[i])
        if m is None or (m.group(1)[0] == "`" and "`" in m.group(2)):
            i += 1
            continue
        fence = m.group(1)
        j = i + 1
        while j < n and not _closes(lines[j], fence):
            j += 1
        if prose_start < i:
            yield _Segment(False, lines[prose_start:i])
        end = min(j + 1, n)
        yield _Segment(True, lines[i:end], closed=j < n, info=m.group(2).strip())
        i = prose_start = end
    if prose_start < n:
        yield _Segment(False, lines[prose_start:n])


def _closes(line: str, fence: str) -> bool:
    m = _FENCE_CLOSE.fullmatch(line)
    return m is not None and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)


def _map_prose(text: str, fn: Callable[[str], str]) -> tuple[str, bool]:
    """Apply ``fn`` to each prose run of ``text`` (code kept); whether anything changed."""
    out: list[str] = []
    changed = False
    for seg in _segments(text.split("\n")):
        if seg.code:
            out.extend(seg.lines)
            continue
        prose = "\n".join(seg.lines)
        new = fn(prose)
        changed = changed or new != prose
        out.append(new)
    return "\n".join(out), changed


# --------------------------------------------------------------------------- removal


def _strip_leftovers(text: str) -> str:
    """Drop ``<script>``/``<style>`` leftovers outside fenced code."""
    for _ in range(_MAX_LEFTOVER_ROUNDS):
        text, changed = _map_prose(text, lambda prose: _SCRIPT_STYLE.sub("", prose))
        if not changed:
            break
    return text


def _apply_patterns(text: str, patterns: list[re.Pattern[str]], matched: list[str]) -> str:
    def apply(prose: str) -> str:
        for pattern in patterns:
            matched.extend(m.group(0) for m in pattern.finditer(prose) if m.group(0))
            prose = pattern.sub("", prose)
        return prose

    return _map_prose(text, apply)[0]


def _banner(lines: list[str]) -> bool:
    """Whether these lines (one block or one line) are one standalone banner."""
    if any(_is_table_row(line) for line in lines):
        return False
    view = " ".join(" ".join(_LIST_MARKER.sub("", line, count=1) for line in lines).split())
    if not view or _more_words_than(view, BANNER_MAX_WORDS):
        return False
    return _ANY_BANNER.fullmatch(view) is not None


def _more_words_than(text: str, limit: int) -> bool:
    """Whether ``text`` has more than ``limit`` words (it stops counting there)."""
    return next(itertools.islice(_WORD.finditer(text), limit, None), None) is not None


def _drop_banners(block: list[str], removed: list[str]) -> list[str]:
    """The block without its banners: the whole block if it is one, else banner lines."""
    if block:
        lower = "\n".join(block).lower()
        if not any(word in lower for word in _BANNER_WORDS):
            return block
    while block:
        if _banner(block):
            removed.append("\n".join(block))
            return []
        if len(block) == 1:  # its one line is the block: not a banner either
            break
        kept: list[str] = []
        for line in block:
            if _banner([line]):
                removed.append(line)
            else:
                kept.append(line)
        if len(kept) == len(block):
            break
        block = kept  # a shorter block may now be a banner as a whole
    return block


# --------------------------------------------------------------------------- whitespace


def _is_table_row(line: str) -> bool:
    """A markdown table row, or a row of the plain-text form (cells joined by tabs)."""
    stripped = line.strip()
    return stripped.startswith("|") or "\t" in stripped


def _normalise_line(line: str) -> str:
    """One prose line: NBSP to space, inner runs of spaces collapsed, indentation kept."""
    if line and not line[-1].isspace() and "  " not in line and "\u00a0" not in line:
        return line  # nothing to collapse, trim or replace (most lines)
    if not line.strip():
        return ""
    line = line.replace("\u00a0", " ")
    if _is_table_row(line):
        return line.rstrip()
    body = line.lstrip(" \t")
    indent = line[: len(line) - len(body)]
    return (indent + _SPACES.sub(" ", body)).rstrip()


def _normalise(text: str, removed: list[str]) -> str:
    """Whitespace outside code, banner removal, blank-line runs; code kept verbatim."""
    out: list[tuple[str, bool]] = []  # (line, is code)
    for seg in _segments(text.split("\n")):
        if seg.code:
            out.extend((line, True) for line in seg.lines)
            continue
        block: list[str] = []
        for line in map(_normalise_line, seg.lines):
            if line:
                block.append(line)
                continue
            out.extend((kept, False) for kept in _drop_banners(block, removed))
            out.append(("", False))
            block = []
        out.extend((kept, False) for kept in _drop_banners(block, removed))
    while out and out[-1] == ("", False):  # trailing blank lines
        out.pop()
    lines: list[str] = []
    blank = True  # drops leading blank lines
    for line, code in out:
        if code or line:
            blank = False
        elif blank:
            continue
        else:
            blank = True
        lines.append(line)
    return "\n".join(lines)


def word_count(text: str) -> int:
    """Number of ``\\w+`` tokens: markdown punctuation does not count.

    >>> word_count("# Title\\n\\n- one, two")
    3
    """
    return len(_WORD.findall(text))
