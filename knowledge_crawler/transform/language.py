"""A page's language: declared (``<html lang>``, Content-Language, og:locale) or guessed
from its text (a distinctive script, else stop-word counts) (pure)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from knowledge_crawler.transform._text import WORD_RE
from knowledge_crawler.transform.title import meta_content

if TYPE_CHECKING:
    from lxml.html import HtmlElement

__all__ = ["declared_language", "guess_language"]

_LANG_RE = re.compile(r"^[a-zA-Z]{2,3}(?=$|[-_])")


def _lang_code(value: str | None) -> str | None:
    if not value:
        return None
    m = _LANG_RE.match(value.strip())
    if not m:
        return None
    code = m.group(0).lower()
    return None if code in {"und", "xx", "zxx", "mul"} else code


def declared_language(tree: HtmlElement) -> str | None:
    """Primary subtag of ``<html lang>``, Content-Language or og:locale; None if absent."""
    root = tree.getroottree().getroot()
    for value in (
        root.get("lang"),
        root.get("xml:lang"),
        root.get("{http://www.w3.org/XML/1998/namespace}lang"),
    ):
        code = _lang_code(value)
        if code:
            return code
    for el in tree.iterfind(".//meta[@http-equiv]"):
        if (el.get("http-equiv") or "").lower() == "content-language":
            code = _lang_code((el.get("content") or "").split(",")[0])
            if code:
                return code
    return _lang_code(meta_content(tree, "og:locale"))


_STOPWORD_LISTS: dict[str, str] = {
    "en": "the and of to in is that for it with was on as are be this by",
    "de": "der die und das ist nicht mit sich auf ein eine den von zu dem",
    "fr": "le la les et des est une pour dans que qui pas sur du au avec",
    "es": "el la los las y que es en por una con para del se lo como",
    "pt": "o os as e que é em um uma para com não do da dos das se",
    "it": "il di che e la per una sono del della non con gli le è",
    "nl": "de het een en van is dat niet op te voor met zijn er",
    "ru": "и в не на что я с он как это по но из к то",  # noqa: RUF001
}
_STOPWORDS = {code: frozenset(words.split()) for code, words in _STOPWORD_LISTS.items()}
_SCRIPTS: tuple[tuple[str, int, int], ...] = (
    ("ko", 0xAC00, 0xD7A3),
    ("ja", 0x3040, 0x30FF),
    ("zh", 0x4E00, 0x9FFF),
    ("th", 0x0E00, 0x0E7F),
    ("el", 0x0370, 0x03FF),
    ("he", 0x0590, 0x05FF),
    ("ar", 0x0600, 0x06FF),
    ("hy", 0x0530, 0x058F),
    ("ka", 0x10A0, 0x10FF),
    ("hi", 0x0900, 0x097F),
)


def guess_language(text: str) -> str | None:
    """Cheap guess: a distinctive script, else stop-word counts; None when unsure."""
    sample = text[:4000]
    if len(sample) < 40:
        return None
    counts: dict[str, int] = {}
    letters = 0
    for ch in sample:
        if not ch.isalpha():
            continue
        letters += 1
        o = ord(ch)
        if o < 0x0370:
            continue
        for code, lo, hi in _SCRIPTS:
            if lo <= o <= hi:
                counts[code] = counts.get(code, 0) + 1
                break
    if letters and counts:
        if counts.get("ja", 0) > 0.05 * letters:
            return "ja"
        code, n = max(counts.items(), key=lambda kv: kv[1])
        if n > 0.3 * letters:
            return code
    words = [w.lower() for w in WORD_RE.findall(sample)]
    if len(words) < 8:
        return None
    scores = {code: sum(1 for w in words if w in stop) for code, stop in _STOPWORDS.items()}
    best = max(scores, key=lambda c: scores[c])
    ranked = sorted(scores.values(), reverse=True)
    if ranked[0] >= max(3, 0.05 * len(words)) and ranked[0] > 1.5 * ranked[1]:
        return best
    return None
