"""Deterministic site model and article content for the loopback test site.

Everything here is a pure function of ``(pages, seed)`` plus, for article bodies, the list of
mutations applied so far.  Per-article metadata (slug, title, tags, links, flags) is computed
eagerly and cheaply; article bodies are generated lazily when a page is rendered.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from ._vocab import (
    ADVERBS,
    CONNECTORS,
    FIRST_NAMES,
    GENERIC_ADJECTIVES,
    GENERIC_NOUNS,
    GENERIC_VERBS,
    HEADINGS,
    KINDS,
    LAST_NAMES,
    PLACES,
    SENTENCES,
    TIME_UNITS,
    TITLE_PATTERNS,
    TOPICS,
    Topic,
)

SITE_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
"""Publication dates are spread over the year after this instant."""

MUTATION_KINDS: tuple[str, ...] = (
    "price",
    "text",
    "stock",
    "whitespace",
    "case",
    "append",
    "rewrite",  # every paragraph rewritten: the page no longer resembles its old self
)

_SLOT = re.compile(r"\{(\w+)\}")
_A_AN = re.compile(r"\b([Aa]) (?=[aeiouAEIOU])")
_NON_SLUG = re.compile(r"[^a-z0-9]+")
_SIBILANT = ("s", "sh", "ch", "x", "z", "o")
_WORD = re.compile(r"[A-Za-z0-9][\w'-]*")
_PARSED: dict[str, list[str]] = {}


def _parse(template: str) -> list[str]:
    """``"The {a} {n}."`` -> ``["The ", "a", " ", "n", "."]`` (odd positions are slots)."""
    parts = _PARSED.get(template)
    if parts is None:
        parts = _PARSED[template] = _SLOT.split(template)
    return parts


def slugify(text: str) -> str:
    """Lower-case ASCII slug: runs of anything but letters and digits become one hyphen."""
    return _NON_SLUG.sub("-", text.lower()).strip("-")


def plural(word: str) -> str:
    """Naive English plural, good enough for the controlled vocabulary."""
    if word.endswith(_SIBILANT):
        return word + "es"
    if len(word) > 1 and word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def third_person(verb: str) -> str:
    """Third-person singular present tense of a regular verb."""
    return plural(verb)


def word_count(text: str) -> int:
    """Number of words (runs starting with a letter or digit) in ``text``."""
    return len(_WORD.findall(text))


class Prose:
    """Sentence and paragraph generator biased towards a primary and a secondary topic."""

    def __init__(self, rng: random.Random, primary: Topic, secondary: Topic) -> None:
        self.rng = rng
        self.primary = primary
        self.secondary = secondary
        self._random = rng.random

    def choice(self, seq: Sequence[str]) -> str:
        """Like ``rng.choice`` but cheaper (one ``random()`` call)."""
        return seq[int(self._random() * len(seq))]

    def _pick(
        self, primary: Sequence[str], secondary: Sequence[str], generic: Sequence[str]
    ) -> str:
        r = self._random()
        if r < 0.55:
            return self.choice(primary)
        if r < 0.7:
            return self.choice(secondary)
        return self.choice(generic)

    def noun(self) -> str:
        return self._pick(self.primary.nouns, self.secondary.nouns, GENERIC_NOUNS)

    def adjective(self) -> str:
        return self._pick(self.primary.adjectives, self.secondary.adjectives, GENERIC_ADJECTIVES)

    def verb(self) -> str:
        return self._pick(self.primary.verbs, self.secondary.verbs, GENERIC_VERBS)

    def name(self) -> str:
        return f"{self.choice(FIRST_NAMES)} {self.choice(LAST_NAMES)}"

    def _number(self, low: int, high: int) -> str:
        return str(low + int(self._random() * (high - low + 1)))

    def _slot(self, name: str) -> str:
        key = name.rstrip("23")
        if key == "n":
            return self.noun()
        if key == "ns":
            return plural(self.noun())
        if key == "a":
            return self.adjective()
        if key == "v":
            return third_person(self.verb())
        if key == "vb":
            return self.verb()
        if key == "adv":
            return self.choice(ADVERBS)
        if key == "C":
            return self.choice(CONNECTORS)
        if key == "name":
            return self.name()
        if key == "place":
            return self.choice(PLACES)
        if key == "num":
            return self._number(2, 40)
        if key == "pct":
            return self._number(5, 95)
        if key == "t":
            return self.choice(TIME_UNITS)
        raise KeyError(key)

    def fill(self, template: str) -> str:
        parts = _parse(template)
        out = [p if k % 2 == 0 else self._slot(p) for k, p in enumerate(parts)]
        text = _A_AN.sub(r"\1n ", "".join(out))
        return text[:1].upper() + text[1:]

    def sentence(self) -> str:
        return self.fill(self.choice(SENTENCES))

    def paragraph(self, sentences: int) -> str:
        return " ".join(self.sentence() for _ in range(sentences))

    def heading(self) -> str:
        return self.fill(self.choice(HEADINGS))

    def phrase(self) -> str:
        return self.fill(self.rng.choice(("{a} {n} for the {n2}", "{a} {ns}", "the {n} and {n2}")))


@dataclass(frozen=True)
class ArticleMeta:
    """Cheap per-article facts, computed for every article at start-up."""

    i: int
    slug: str
    title: str
    topic: Topic
    secondary: Topic
    tags: tuple[str, ...]
    author: str
    published: datetime
    summary: str
    target_words: int
    has_product: bool
    base_price_cents: int
    has_list: bool
    has_table: bool
    has_code: bool
    related: tuple[int, ...]
    inline_links: tuple[int, ...]
    has_print: bool = False
    has_syndicated: bool = False
    has_private: bool = False
    redirect_to: int | None = None

    @property
    def path(self) -> str:
        return f"/articles/{self.slug}"


@dataclass(frozen=True)
class Block:
    """One block of an article body.

    ``kind`` is ``lead``, ``p``, ``h2``, ``h3``, ``ul``, ``table`` or ``pre``.  A ``p`` block may
    end with a "see also" link to article ``link`` written in URL variant ``variant``.
    """

    kind: str
    text: str = ""
    items: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    link: int | None = None
    variant: int = 0


@dataclass(frozen=True)
class ArticleView:
    """An article's content after applying its mutations (what a page renders)."""

    meta: ArticleMeta
    blocks: tuple[Block, ...]
    price_cents: int | None
    in_stock: bool | None
    reviews: tuple[str, ...]
    whitespace: int

    @property
    def words(self) -> int:
        total = word_count(self.meta.title)
        for b in self.blocks:
            total += word_count(b.text) + sum(word_count(x) for x in b.items)
            total += sum(word_count(c) for row in b.rows for c in row)
        return total + sum(word_count(r) for r in self.reviews)


def format_price(cents: int) -> str:
    return f"${cents // 100:,}.{cents % 100:02d}"


def product_state(meta: ArticleMeta, mutations: Sequence[str]) -> tuple[int | None, bool | None]:
    """Current ``(price_cents, in_stock)``; ``(None, None)`` when no product box is shown."""
    counts = Counter(mutations)
    if not (meta.has_product or counts["price"] or counts["stock"]):
        return None, None
    return meta.base_price_cents + 1250 * counts["price"], counts["stock"] % 2 == 0


def _case_variant(text: str, n: int) -> str:
    return (text.upper, text.lower, text.title)[(n - 1) % 3]()


class SiteModel:
    """All articles of a generated site, plus which of them have print/syndicated/private twins."""

    def __init__(self, pages: int, seed: int) -> None:
        if pages < 1:
            raise ValueError("pages must be >= 1")
        self.pages = pages
        self.seed = seed
        rng = random.Random(f"{seed}:site")
        n = pages
        k = max(1, n // 16) if n >= 4 else 0
        special = rng.sample(range(n), 2 * k)
        self.print_ids: tuple[int, ...] = tuple(sorted(special[:k]))
        self.syndicated_ids: tuple[int, ...] = tuple(sorted(special[k:]))
        self.private_ids: tuple[int, ...] = (
            tuple(sorted(rng.sample(range(n), max(1, n // 10)))) if n >= 2 else ()
        )
        redirect_from = set(rng.sample(range(n), k)) if n >= 2 else set()

        first: list[tuple[str, str, Topic, Topic, random.Random]] = []
        seen_titles: set[str] = set()
        seen_slugs: set[str] = set()
        by_topic: dict[str, list[int]] = {}
        for i in range(n):
            r = random.Random(f"{seed}:meta:{i}")
            topic = r.choice(TOPICS)
            secondary = r.choice([t for t in TOPICS if t is not topic])
            title = ""
            for _attempt in range(6):
                pattern = r.choice(TITLE_PATTERNS)
                subject = r.choice(topic.subjects)
                title = pattern.format(s=subject, n=r.randint(3, 12), place=r.choice(PLACES))
                title = title[:1].upper() + title[1:]
                if title not in seen_titles:
                    break
            else:
                title = f"{title} (part {i})"
            seen_titles.add(title)
            slug = slugify(title)
            if slug in seen_slugs:
                slug = f"{slug}-{i}"
            seen_slugs.add(slug)
            first.append((slug, title, topic, secondary, r))
            by_topic.setdefault(topic.slug, []).append(i)

        self.articles: list[ArticleMeta] = []
        for i, (slug, title, topic, secondary, r) in enumerate(first):
            same = [j for j in by_topic[topic.slug] if j != i]
            related = r.sample(same, min(2, len(same)))
            extra: list[int] = []
            while len(extra) < min(3, n - 1 - len(related)):
                j = r.randrange(n)
                if j != i and j not in related and j not in extra:
                    extra.append(j)
            related += extra
            inline: list[int] = []
            while n > 1 and len(inline) < 2:
                j = r.randrange(n)
                if j != i:
                    inline.append(j)
            meta = ArticleMeta(
                i=i,
                slug=slug,
                title=title,
                topic=topic,
                secondary=secondary,
                tags=(topic.slug, secondary.slug, r.choice(KINDS)),
                author=f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)}",
                published=SITE_EPOCH + timedelta(days=r.randrange(365), seconds=r.randrange(86400)),
                summary=Prose(r, topic, secondary).sentence(),
                target_words=r.randint(320, 700),
                has_product=r.random() < 0.6,
                base_price_cents=r.randint(5, 480) * 100 + r.choice((0, 0, 50, 99)),
                has_list=r.random() < 0.5,
                has_table=r.random() < 0.35,
                has_code=r.random() < 0.3,
                related=tuple(related),
                inline_links=tuple(inline),
                has_print=i in self.print_ids,
                has_syndicated=i in self.syndicated_ids,
                has_private=i in self.private_ids,
                redirect_to=related[0] if i in redirect_from and related else None,
            )
            if meta.has_syndicated:
                # Long bodies keep a one-paragraph rewrite well above near-duplicate thresholds.
                meta = replace(meta, target_words=max(meta.target_words, 640))
            self.articles.append(meta)

        self.by_slug: dict[str, int] = {a.slug: a.i for a in self.articles}
        self.tags: dict[str, list[int]] = {}
        for a in self.articles:
            for t in a.tags:
                self.tags.setdefault(t, []).append(a.i)
        self.tag_names: dict[str, str] = {t.slug: t.name for t in TOPICS}
        self.tag_names.update({k: k.replace("-", " ").title() for k in KINDS})

    # -- bodies ----------------------------------------------------------------------------

    def base_blocks(self, i: int) -> tuple[Block, ...]:
        """The generated (unmutated) body of article ``i``."""
        meta = self.articles[i]
        rng = random.Random(f"{self.seed}:body:{i}")
        prose = Prose(rng, meta.topic, meta.secondary)
        blocks: list[Block] = [Block("lead", prose.paragraph(rng.randint(2, 3)))]
        words = word_count(blocks[0].text)
        extras = [
            kind
            for kind, flag in (
                ("ul", meta.has_list),
                ("table", meta.has_table),
                ("pre", meta.has_code),
            )
            if flag
        ]
        links = list(meta.inline_links)
        sections = 0
        while words < meta.target_words or sections < 3:
            blocks.append(Block("h2", prose.heading()))
            for _ in range(rng.randint(1, 3)):
                text = prose.paragraph(rng.randint(2, 6))
                link = links.pop() if links and rng.random() < 0.5 else None
                variant = (i * 3 + len(links) + 1) % len(LINK_VARIANTS)
                blocks.append(Block("p", text, link=link, variant=variant))
                words += word_count(text)
                if words >= meta.target_words and sections >= 2:
                    break
            if rng.random() < 0.35:
                blocks.append(Block("h3", prose.heading()))
                text = prose.paragraph(rng.randint(2, 4))
                blocks.append(Block("p", text))
                words += word_count(text)
            if extras and (rng.random() < 0.5 or words >= meta.target_words):
                blocks.append(self._extra(extras.pop(0), prose, meta))
            sections += 1
        blocks.extend(self._extra(kind, prose, meta) for kind in extras)
        if links:
            variant = (i * 3 + 7) % len(LINK_VARIANTS)
            blocks.append(Block("p", prose.paragraph(2), link=links.pop(), variant=variant))
        return tuple(blocks)

    @staticmethod
    def _extra(kind: str, prose: Prose, meta: ArticleMeta) -> Block:
        rng = prose.rng
        if kind == "ul":
            return Block("ul", items=tuple(prose.phrase() for _ in range(rng.randint(3, 6))))
        if kind == "table":
            header = ("Option", "Typical cost", "Rating")
            rows = [header]
            for _ in range(rng.randint(3, 5)):
                cost = format_price(rng.randint(2, 300) * 100)
                rows.append((prose.phrase(), cost, f"{rng.randint(2, 5)}/5"))
            return Block("table", rows=tuple(rows))
        lines = [f"# {meta.topic.name.lower()} settings"]
        for _ in range(rng.randint(3, 6)):
            key = f"{prose.noun()}_{rng.choice(('limit', 'mode', 'interval', 'level'))}"
            value = rng.choice((str(rng.randint(1, 500)), f'"{prose.adjective()}"', "true"))
            lines.append(f"{key.replace('-', '_')} = {value}")
        return Block("pre", text="\n".join(lines))

    def view(
        self, i: int, mutations: Sequence[str] = (), *, syndicated: bool = False
    ) -> ArticleView:
        """Article ``i`` with ``mutations`` applied; ``syndicated`` rewrites one paragraph."""
        meta = self.articles[i]
        blocks = list(self.base_blocks(i))
        counts = Counter(mutations)
        if counts["text"]:
            rng = random.Random(f"{self.seed}:text:{i}:{counts['text']}")
            blocks[0] = Block("lead", Prose(rng, meta.topic, meta.secondary).paragraph(3))
        if counts["rewrite"]:
            rng = random.Random(f"{self.seed}:rewrite:{i}:{counts['rewrite']}")
            prose = Prose(rng, meta.topic, meta.secondary)
            blocks = [
                Block(b.kind, prose.paragraph(max(2, b.text.count(". ") + 1)))
                if b.kind in ("lead", "p")
                else b
                for b in blocks
            ]
        if counts["case"]:
            for pos, b in enumerate(blocks):
                if b.kind == "h2":
                    blocks[pos] = Block("h2", _case_variant(b.text, counts["case"]))
                    break
        if syndicated:
            pos = self.syndicated_paragraph(blocks)
            sentences = blocks[pos].text.count(". ") + 1
            rng = random.Random(f"{self.seed}:synd:{i}")
            text = Prose(rng, meta.topic, meta.secondary).paragraph(sentences)
            blocks[pos] = Block("p", text)
        reviews = []
        for k in range(1, counts["append"] + 1):
            rng = random.Random(f"{self.seed}:review:{i}:{k}")
            prose = Prose(rng, meta.topic, meta.secondary)
            reviews.append(f"{prose.name()} from {rng.choice(PLACES)} wrote: {prose.paragraph(2)}")
        price, stock = product_state(meta, mutations)
        return ArticleView(meta, tuple(blocks), price, stock, tuple(reviews), counts["whitespace"])

    @staticmethod
    def syndicated_paragraph(blocks: Sequence[Block]) -> int:
        """Index of the paragraph a syndicated copy rewrites: the shortest plain paragraph."""
        candidates = [(word_count(b.text), pos) for pos, b in enumerate(blocks) if b.kind == "p"]
        plain = [c for c in candidates if blocks[c[1]].link is None] or candidates
        return min(plain)[1]

    def private_blocks(self, i: int) -> tuple[Block, ...]:
        meta = self.articles[i]
        rng = random.Random(f"{self.seed}:private:{i}")
        prose = Prose(rng, meta.topic, meta.secondary)
        return (
            Block("lead", "Internal draft. Not for publication. " + prose.paragraph(2)),
            Block("h2", "Open questions"),
            Block("p", prose.paragraph(4)),
            Block("h2", "Reviewer notes"),
            Block("p", prose.paragraph(3)),
        )


LINK_VARIANTS: tuple[str, ...] = (
    "{path}",
    "{origin}{path}",
    "{path}?utm_source=newsletter&utm_campaign=spring",
    "{path}?ref=sidebar",
    "{upper}{path}",
    "{path}/",
    "{path}#comments",
    "{origin}{path}?gclid=abc",
    "{path}?fbclid=x",
    "//{hostport}{path}",
    "{path}/?utm_medium=email#top",
    "{upper}{path}?utm_source=newsletter&utm_medium=email&utm_campaign=spring#comments",
)
"""How links to other articles are written: ``{path}`` is ``/articles/<slug>``."""

TRACKING_PARAMS: tuple[str, ...] = (
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "ref",
    "gclid",
    "fbclid",
)
