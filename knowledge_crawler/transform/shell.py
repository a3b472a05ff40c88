"""Is an HTML page a script shell, whose text only a browser would see? (SPEC F-RENDER)

Pure module (lxml only). ``render = "auto"`` fetches a page with plain HTTP first
and renders it in a browser only when :func:`shell_signs` says the response is a
*script shell*: little visible text, and an empty app root (``<div id="root">``,
``id="app"``, ``__next``, ...), several scripts or a ``<noscript>`` asking for
JavaScript. A thin page with no scripts is just a thin page: a browser would
find nothing more. :func:`render_helped` then tells, from the rendered page,
whether the browser was worth it, so that the crawl can remember the verdict
for the host.

>>> shell_signs(b'<html><body><div id="app"></div><script src="/a.js"></script></body></html>')
ShellSigns(words=0, scripts=1, empty_root=True, noscript=False)
>>> _.is_shell
True
>>> shell_signs(b"<html><body><p>" + b"word " * 80 + b"</p></body></html>").is_shell
False
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree
from lxml import html as lxml_html

__all__ = [
    "APP_ROOT_IDS",
    "SHELL_MAX_WORDS",
    "SHELL_MIN_SCRIPTS",
    "ShellSigns",
    "render_helped",
    "shell_signs",
]

#: fewer visible words than this is "little text" (the default ``thin_words`` too)
SHELL_MAX_WORDS = 50
#: this many ``<script>`` elements on a page with little text make it a shell
SHELL_MIN_SCRIPTS = 3
#: ids (and a ``data-reactroot`` attribute) that front-end frameworks mount their app on
APP_ROOT_IDS = frozenset(
    {"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "main-app", "react-root"}
)
_VISIBLE_TEXT = etree.XPath(
    "//text()[not(ancestor::script or ancestor::style or ancestor::noscript"
    " or ancestor::template or ancestor::head)]"
)
_WORD = re.compile(r"\w+")
_NEEDS_JS = re.compile(r"javascript|enable js|js is disabled", re.I)


@dataclass(frozen=True, slots=True)
class ShellSigns:
    """What :func:`shell_signs` counted on a page."""

    #: words of visible text (outside script, style, noscript, template and head)
    words: int
    #: ``<script>`` elements, inline or not
    scripts: int
    #: an app root element with no text and no element children
    empty_root: bool
    #: a ``<noscript>`` that mentions JavaScript
    noscript: bool

    @property
    def is_shell(self) -> bool:
        """Little text, and something that says a script is meant to fill the page."""
        return self.words < SHELL_MAX_WORDS and (
            self.empty_root or self.scripts >= SHELL_MIN_SCRIPTS or self.noscript
        )


def shell_signs(body: bytes | str) -> ShellSigns:
    """Count what tells a script shell from a page: see :class:`ShellSigns`."""
    if not body or not body.strip():
        return ShellSigns(0, 0, False, False)
    try:
        root = lxml_html.fromstring(body)
    except (etree.ParserError, ValueError):
        return ShellSigns(0, 0, False, False)
    scripts = 0
    noscript = False
    empty_root = False
    words = 0
    for element in root.iter(etree.Element):
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag == "script":
            scripts += 1
        elif tag == "noscript":
            noscript = noscript or bool(_NEEDS_JS.search(" ".join(map(str, element.itertext()))))
        elif not empty_root and _is_app_root(element) and _is_empty(element):
            empty_root = True
    texts = _VISIBLE_TEXT(root)
    if isinstance(texts, list):
        for text in texts:
            words += len(_WORD.findall(str(text)))
    return ShellSigns(words, scripts, empty_root, noscript)


def _is_app_root(element: etree._Element) -> bool:
    return (element.get("id") or "").lower() in APP_ROOT_IDS or "data-reactroot" in element.attrib


def _is_empty(element: etree._Element) -> bool:
    if (element.text or "").strip():
        return False
    return all(
        not isinstance(child.tag, str) and not (child.tail or "").strip() for child in element
    )


def render_helped(http_words: int, rendered_words: int) -> bool:
    """Whether the rendered page has clearly more visible words than the HTTP one.

    >>> render_helped(3, 400), render_helped(30, 34)
    (True, False)
    """
    return rendered_words >= max(2 * http_words, http_words + 20)
