"""A per-site spider's link rules: which links found on a page are followed (pure).

A spider derived from the knowledge spider may narrow the links it follows
from pages with three class attributes, checked once when it starts
(:meth:`LinkRules.of`):

* ``follow``: URL regexes; when any are given, a link is followed only if one
  of them matches it;
* ``deny``: URL regexes; a link one of them matches is not followed;
* ``link_selector``: a CSS or XPath selector
  (:mod:`~knowledge_crawler.transform.selector`) for the parts of a page
  links are taken from, e.g. ``"nav.pagination, main"``.

They come on top of the source's scope (``allowed_domains``, ``include``,
``exclude``): a link must pass both. Like ``include``/``exclude``, a pattern is
searched anywhere in the absolute URL as the page wrote it (resolved, not yet
canonical). They decide only which links found on a page are followed: start
URLs, sitemaps, feeds, APIs, stored pages and the requests a spider builds
itself are not filtered.

>>> rules = LinkRules.of(follow=[r"/docs/"], deny=[r"\\?print="])
>>> rules.allows("https://example.com/docs/a"), rules.allows("https://example.com/blog/")
(True, False)
>>> rules.allows("https://example.com/docs/a?print=1")
False
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from knowledge_crawler.transform.selector import selector_xpath

__all__ = ["LinkRules"]


@dataclass(frozen=True, slots=True)
class LinkRules:
    """The checked link rules of one spider."""

    follow: tuple[re.Pattern[str], ...] = ()
    deny: tuple[re.Pattern[str], ...] = ()
    #: the XPath of ``link_selector`` (a CSS one translated), None: the whole page
    region: str | None = None

    @classmethod
    def of(
        cls,
        follow: Iterable[str] | None = (),
        deny: Iterable[str] | None = (),
        link_selector: str | None = None,
    ) -> LinkRules:
        """The rules, checked: :class:`ValueError` naming the attribute and what is wrong.

        >>> LinkRules.of(deny=["(unclosed"])
        Traceback (most recent call last):
        ...
        ValueError: deny[0]: bad regex '(unclosed': missing ), unterminated subpattern at position 0
        >>> LinkRules.of(follow="/docs/")
        Traceback (most recent call last):
        ...
        ValueError: follow: expected a tuple of regexes, got a string: '/docs/'
        """
        region = None
        if link_selector is not None:
            try:
                region = selector_xpath(link_selector)
            except ValueError as exc:
                raise ValueError(f"link_selector: {exc}") from None
        return cls(_patterns("follow", follow), _patterns("deny", deny), region)

    def allows(self, url: str) -> bool:
        """Whether a link to ``url`` found on a page is followed."""
        if self.follow and not any(p.search(url) for p in self.follow):
            return False
        return not any(p.search(url) for p in self.deny)

    @property
    def filters(self) -> bool:
        """Whether any URL pattern is set (links pass untouched otherwise)."""
        return bool(self.follow or self.deny)


def _patterns(name: str, value: Iterable[str] | None) -> tuple[re.Pattern[str], ...]:
    if value is None:
        return ()
    if isinstance(value, str | bytes):
        raise ValueError(f"{name}: expected a tuple of regexes, got a string: {value!r}")
    try:
        items = list(value)
    except TypeError:
        raise ValueError(
            f"{name}: expected a tuple of regexes, got {type(value).__name__}"
        ) from None
    patterns = []
    for n, item in enumerate(items):
        if not isinstance(item, str):
            raise ValueError(f"{name}[{n}]: expected a regex string, got {item!r}")
        try:
            patterns.append(re.compile(item))
        except re.error as exc:
            raise ValueError(f"{name}[{n}]: bad regex {item!r}: {exc}") from None
    return tuple(patterns)
