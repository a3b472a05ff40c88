"""The pure work of pipeline stages 1-4 (SPEC F-PIPELINE), one function a stage.

Pure module: no Scrapy, no store. Each pipeline (``knowledge_crawler.pipelines``)
keeps its stage's decisions, counters and log lines and calls its function here:
:func:`extract_page` (1. extract), :func:`clean_page` (2. clean),
:func:`canonical_page` (3. canonicalize) and :func:`fingerprint_page`
(4. fingerprint). :func:`prepare` runs the four in that order for one page, as
the pipelines would, so that a worker process can do all the CPU-heavy work of a
page in one call (:func:`prepare_batch` for several), and the pipelines then
take each stage's result from it: the same functions, the same inputs, the same
values, off the crawl's event loop.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from w3lib.html import get_base_url

from knowledge_crawler.transform.canonical import DEFAULT_TRACKING_PARAMS, canonical_url
from knowledge_crawler.transform.extract import (
    Extraction,
    extract_selected,
    extract_tree,
    parse_page,
    stored_form,
)
from knowledge_crawler.transform.fingerprint import content_hash
from knowledge_crawler.transform.links import link_targets, page_link_urls
from knowledge_crawler.transform.minhash import DEFAULT, MinHashParams, signature, to_bytes
from knowledge_crawler.transform.passages import DEFAULT_MAX_WORDS, Passage, split_passages

__all__ = [
    "AUTO",
    "SELECTED",
    "SELECTOR_FAILED",
    "SELECTOR_MISSED",
    "Cleaned",
    "Extracted",
    "Fingerprint",
    "PageInput",
    "Prepared",
    "StageError",
    "StageRules",
    "canonical_page",
    "clean_page",
    "extract_page",
    "fingerprint_page",
    "prepare",
    "prepare_batch",
]

#: how a page's main content was found (:attr:`Extracted.how`)
AUTO = "auto"  #: automatic extraction
SELECTED = "selected"  #: the elements the spider's content selector matched
SELECTOR_MISSED = "selector_missed"  #: the selector matched no text: automatic extraction
SELECTOR_FAILED = "selector_failed"  #: the selector raised: automatic extraction


@dataclass(frozen=True, slots=True)
class StageRules:
    """What stages 1-4 need to know of a page's source."""

    boilerplate: tuple[re.Pattern[str], ...] = ()
    keep_params: frozenset[str] = frozenset()
    tracking_params: frozenset[str] = DEFAULT_TRACKING_PARAMS
    minhash: MinHashParams = DEFAULT
    passage_words: int = DEFAULT_MAX_WORDS
    #: file extensions (``".jpg"``) whose links are not followed
    skipped_extensions: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class PageInput:
    """One fetched HTML page, as stage 1 receives it."""

    source_id: str
    final_url: str
    html: str
    content_selector: str | None = None
    #: find the page's links too (from the parse extraction uses), and where: an XPath of
    #: the parts of the page to take them from, None for the whole page
    links: bool = False
    link_region: str | None = None
    #: the response's encoding, for non-ASCII characters of a ``<base href>``
    encoding: str = "utf-8"


@dataclass(frozen=True, slots=True)
class Extracted:
    """Stage 1: the extraction (None: it failed, ``error`` says why) and how it was found."""

    extraction: Extraction | None
    how: str = AUTO
    #: the extraction's failure, or the selector's (``SELECTOR_FAILED``), as ``repr``
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Cleaned:
    """Stage 2: the content as stored, the headings it still has, and its word count."""

    content: str
    headings: tuple[str, ...]
    word_count: int


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """Stage 4: SHA-256, the MinHash signature (None without words) and the passages."""

    content_hash: str
    minhash: bytes | None
    minhash_params: str | None
    passages: tuple[Passage, ...]


@dataclass(frozen=True, slots=True)
class Prepared:
    """Stages 1-4 of one page; a stage that could not run (its input failed) is None."""

    final_url: str
    extracted: Extracted
    cleaned: Cleaned | None = None
    canonical_url: str | None = None
    #: why the final URL has no canonical form (stage 3 fails)
    canonical_error: str | None = None
    fingerprint: Fingerprint | None = None
    #: the page's links, when asked for (``PageInput.links``): absolute, in order, once each
    links: tuple[str, ...] = ()


def extract_page(
    html: str, url: str, content_selector: str | None = None, *, tree: Any = None
) -> Extracted:
    """Stage 1: the main content of ``html``, from ``content_selector`` if it matches text.

    ``tree``: the page already parsed by ``parse_page`` (it is used up); else it is parsed.
    """
    how = AUTO
    error: str | None = None
    if content_selector is not None:
        try:
            selected = extract_selected(html, content_selector)
        except Exception as exc:  # a bad selector: the page is extracted automatically
            how, error, selected = SELECTOR_FAILED, repr(exc), None
        else:
            if selected is not None:
                return Extracted(selected, SELECTED)
            how = SELECTOR_MISSED
    try:
        if tree is None:
            tree = parse_page(html)
        return Extracted(extract_tree(tree, url=url, source=html), how, error)
    except Exception as exc:  # a parse failure: the pipeline drops the page, counted
        return Extracted(None, how, repr(exc))


def clean_page(
    markdown: str, headings: tuple[str, ...] | list[str], patterns: tuple[re.Pattern[str], ...]
) -> Cleaned:
    """Stage 2: the stored form of the extracted markdown (see ``stored_form``)."""
    content, kept, words = stored_form(markdown, headings, patterns)
    return Cleaned(content, kept, words)


def canonical_page(final_url: str, rules: StageRules) -> str:
    """Stage 3: the page's identity; :class:`ValueError` for a URL that has none."""
    return canonical_url(
        final_url, keep_params=rules.keep_params, tracking_params=rules.tracking_params
    )


def fingerprint_page(
    content: str, word_count: int, source_id: str, key: str, rules: StageRules
) -> Fingerprint:
    """Stage 4: hash, signature (for a page with words) and passages of the stored content."""
    minhash: bytes | None = None
    params: str | None = None
    if word_count:
        minhash = to_bytes(signature(content, rules.minhash))
        params = rules.minhash.fingerprint()
    passages = split_passages(
        content, source_id=source_id, canonical_url=key, max_words=rules.passage_words
    )
    return Fingerprint(content_hash(content), minhash, params, tuple(passages))


def prepare(page: PageInput, rules: StageRules) -> Prepared:
    """Stages 1-4 of ``page`` in order, as far as each one's input allows.

    What no later stage reads is left out, so that less crosses between processes:
    the extraction's plain-text form (``Extraction.text`` is ``""``), and the cleaned
    content is the extracted markdown itself (the same object) when cleaning left it
    as it was.
    """
    tree: Any = None
    links: tuple[str, ...] = ()
    if page.links:  # one parse of the page for its links and its content
        try:
            tree = parse_page(page.html)
        except Exception:  # the extraction says why
            tree = None
        if tree is not None:
            links = _links(page, tree, rules)
    extracted = extract_page(page.html, page.final_url, page.content_selector, tree=tree)
    if extracted.extraction is None:
        return Prepared(page.final_url, extracted, links=links)
    e = replace(extracted.extraction, text="")
    extracted = replace(extracted, extraction=e)
    cleaned = clean_page(e.markdown, e.headings, rules.boilerplate)
    if cleaned.content == e.markdown:
        cleaned = replace(cleaned, content=e.markdown)
    try:
        key = canonical_page(page.final_url, rules)
    except ValueError as exc:
        return Prepared(page.final_url, extracted, cleaned, canonical_error=str(exc), links=links)
    fingerprint = fingerprint_page(cleaned.content, cleaned.word_count, page.source_id, key, rules)
    return Prepared(page.final_url, extracted, cleaned, key, None, fingerprint, links)


def _links(page: PageInput, tree: Any, rules: StageRules) -> tuple[str, ...]:
    """The page's links as the spider finds them (``page_links``): the same targets, made
    absolute against the same base (``<base href>`` in its first 4 KB, else its URL)."""
    try:
        base = get_base_url(page.html[:4096], page.final_url, page.encoding)
        targets = link_targets(tree, page.link_region)
        return tuple(page_link_urls(targets, base, rules.skipped_extensions))
    except Exception:  # an XPath or URL the page makes fail: no links, as an empty page
        return ()


@dataclass(frozen=True, slots=True)
class StageError:
    """A page whose stages raised: what :func:`prepare_batch` gives in place of its result,
    so that the other pages of its batch are not failed with it."""

    final_url: str
    #: the exception's class name
    kind: str
    #: the exception's message
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}" if self.message else self.kind


def prepare_batch(
    pages: list[PageInput],
    rules: dict[str, StageRules],
    *,
    stages: Callable[[PageInput, StageRules], Prepared] = prepare,
    started: Callable[[int], None] | None = None,
) -> list[Prepared | StageError]:
    """``stages`` (:func:`prepare`) of each page with its source's rules, in order; a page
    whose stages raise gives a :class:`StageError`, and the pages after it go on.

    ``started(i)`` is called as page ``i`` starts (the stage pool's watch on its workers).
    """
    results: list[Prepared | StageError] = []
    for i, page in enumerate(pages):
        if started is not None:
            started(i)
        try:
            results.append(stages(page, rules[page.source_id]))
        except Exception as exc:  # this page's failure, not its batch's
            results.append(StageError(page.final_url, type(exc).__name__, str(exc)[:500]))
    return results
