"""CSS or XPath selectors as a per-site spider writes them: checked, translated, applied (pure).

A selector that starts with ``/`` or ``(`` is XPath; any other is CSS, translated
to XPath by cssselect (the translation Scrapy's ``response.css`` builds on). A
CSS selector list (``"nav.pagination, main"``) becomes one XPath union, so its
matches come in document order. CSS pseudo-elements (``::text``, ``::attr()``)
select text, not elements, and are refused. XPath may use EXSLT regular
expressions under the ``re:`` prefix, as in Scrapy (``re:test(@href, "^/p/")``).

>>> selector_xpath("main")
'descendant-or-self::main'
>>> selector_xpath("(//article)[1]")
'(//article)[1]'
"""

from __future__ import annotations

import functools
from typing import Any

from lxml import etree

__all__ = ["XPATH_NAMESPACES", "is_xpath", "select_elements", "selector_xpath"]

#: the namespaces a selector's XPath may use (Scrapy's ``response.xpath`` knows them too)
XPATH_NAMESPACES = {"re": "http://exslt.org/regular-expressions"}

#: evaluated once when a selector is checked: errors lxml only raises on evaluation
#: (an undefined namespace prefix or function) are found before any page is fetched
_SAMPLE = etree.fromstring("<html><head/><body><main><p>x</p></main></body></html>")


def is_xpath(selector: str) -> bool:
    """Whether ``selector`` is XPath (it starts with ``/`` or ``(``) rather than CSS."""
    return selector.lstrip().startswith(("/", "("))


@functools.lru_cache(maxsize=256)
def selector_xpath(selector: str) -> str:
    """The XPath of a CSS or XPath ``selector``; :class:`ValueError` saying why it is bad.

    >>> selector_xpath("main[")
    Traceback (most recent call last):
    ...
    ValueError: bad CSS selector 'main[': Expected ident or '*', got <EOF at 5>
    """
    if not isinstance(selector, str) or not selector.strip():
        raise ValueError(f"expected a CSS or XPath selector, got {selector!r}")
    text = selector.strip()
    if is_xpath(text):
        xpath = text
        kind = "XPath"
    else:
        from cssselect import HTMLTranslator, SelectorError

        kind = "CSS selector"
        try:
            xpath = HTMLTranslator().css_to_xpath(text)
        except SelectorError as exc:
            raise ValueError(f"bad CSS selector {text!r}: {_one_line(exc)}") from None
    try:
        _compiled(xpath)(_SAMPLE)
    except etree.XPathError as exc:
        raise ValueError(f"bad {kind} {text!r}: {_one_line(exc)}") from None
    return xpath


@functools.lru_cache(maxsize=256)
def _compiled(xpath: str) -> etree.XPath:
    return etree.XPath(xpath, namespaces=XPATH_NAMESPACES)


def select_elements(tree: Any, selector: str) -> list[Any]:
    """The elements of ``tree`` that ``selector`` matches, in document order, outermost only.

    What the selector matches that is not an element (text, attributes, a number)
    is left out, and so is an element inside another match: its text is already
    there. :class:`ValueError` for a bad selector.
    """
    found = _compiled(selector_xpath(selector))(tree)
    if not isinstance(found, list):
        return []
    elements = [e for e in found if isinstance(e, etree._Element) and isinstance(e.tag, str)]
    chosen = set(elements)
    return [e for e in elements if not any(a in chosen for a in e.iterancestors())]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
