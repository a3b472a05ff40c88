"""HTML (and other body) rendering for the loopback test site.

Pages are rendered as *templates*: the per-request noise (footer timestamp, CSRF token) is left
as placeholder markers so the server can hash the stable part for the ETag and then fill in
fresh noise for every response.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Sequence
from html import escape

from ._charsets import CHARSET_PAGES
from ._content import LINK_VARIANTS, ArticleView, Block, SiteModel, format_price, slugify

SITE_NAME = "Localhost Journal"
TS_MARK = "\x00TS\x00"
CSRF_MARK = "\x00CSRF\x00"
PER_PAGE = 20

ROBOTS_TXT = """\
# Robots rules for the Localhost Journal test site
User-agent: *
Disallow: /private/
Disallow: /__control/
"""

CSS = """\
body{font-family:Georgia,serif;margin:0 auto;max-width:60rem;line-height:1.5}
.skip-link{position:absolute;left:-999px}.cookie-banner{background:#222;color:#eee;padding:1em}
.sidebar{font-size:.9em}.site-footer{border-top:1px solid #ccc;color:#666}
"""


def _attr(text: str) -> str:
    return escape(text, quote=True)


def _heading_id(text: str) -> str:
    return slugify(text) or "section"


class Renderer:
    """Renders every kind of page for one site model, with links pointing at ``origin``."""

    def __init__(self, model: SiteModel, host: str, port: int) -> None:
        self.model = model
        self.host = host
        self.port = port
        self.hostport = f"{host}:{port}"
        self.origin = f"http://{self.hostport}"
        self.upper_origin = f"http://{host.upper()}:{port}"
        counts = sorted(model.tags.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        self.top_tags = [t for t, _ in counts[:5]]

    # -- links -----------------------------------------------------------------------------

    def article_href(self, j: int, variant: int) -> str:
        """A (deliberately messy) link to article ``j`` in URL variant ``variant``."""
        template = LINK_VARIANTS[variant % len(LINK_VARIANTS)]
        return template.format(
            path=self.model.articles[j].path,
            origin=self.origin,
            upper=self.upper_origin,
            hostport=self.hostport,
        )

    def _a(self, href: str, text: str, extra: str = "") -> str:
        return f'<a href="{_attr(href)}"{extra}>{escape(text)}</a>'

    # -- layout ----------------------------------------------------------------------------

    def layout(
        self,
        *,
        title: str,
        main: str,
        description: str,
        canonical: str | None = None,
        og_type: str = "website",
        sidebar: str = "",
        head_extra: str = "",
        chrome: bool = True,
    ) -> str:
        """Full HTML document; ``chrome=False`` drops cookie banner and sidebar (thin pages)."""
        head = [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(title)} | {SITE_NAME}</title>",
            f'<meta name="description" content="{_attr(description)}">',
            f'<meta property="og:title" content="{_attr(title)}">',
            f'<meta property="og:type" content="{og_type}">',
            f'<meta property="og:site_name" content="{SITE_NAME}">',
        ]
        if canonical:
            head.append(f'<meta property="og:url" content="{_attr(canonical)}">')
            head.append(f'<link rel="canonical" href="{_attr(canonical)}">')
        head.append('<link rel="stylesheet" href="/static/site.css">')
        if head_extra:
            head.append(head_extra)
        head.append("</head>")
        nav_tags = "".join(
            f'<li><a href="/tag/{t}">{escape(self.model.tag_names.get(t, t))}</a></li>'
            for t in self.top_tags
        )
        body = [
            "<body>",
            '<a class="skip-link" href="#main">Skip to main content</a>',
        ]
        if chrome:
            body.append(
                '<div class="cookie-banner" id="cookie-banner" role="dialog" '
                'aria-label="Cookie consent">'
                "<p>We use cookies to personalise content and ads, to provide social media "
                "features and to analyse our traffic. By clicking “Accept all cookies” you agree "
                "to the storing of cookies on your device.</p>"
                '<button type="button" id="accept-cookies">Accept all cookies</button> '
                '<button type="button" id="reject-cookies">Reject</button> '
                '<a href="#cookie-settings">Settings</a></div>'
            )
        body.append(
            '<header class="site-header">'
            f'<a class="logo" href="/">{SITE_NAME}</a>'
            '<nav aria-label="Main"><ul><li><a href="/">Home</a></li>'
            '<li><a href="/articles">All articles</a></li>'
            f'{nav_tags}<li><a href="/about">About</a></li></ul></nav>'
            '<form class="search" role="search" action="/search" method="get">'
            '<input type="search" name="q" placeholder="Search"></form>'
            "</header>"
        )
        body.append(f'<main id="main">\n{main}\n</main>')
        if chrome:
            body.append(f'<aside class="sidebar">\n{sidebar}{self._newsletter()}</aside>')
        body.append(
            '<footer class="site-footer">'
            f"<p>© localhost 2024&ndash;2025 {SITE_NAME}. All rights reserved.</p>"
            '<p><a href="/about">About us</a> · <a href="/about#contact">Contact</a> · '
            '<a href="#cookie-settings">Cookie settings</a></p>'
            f'<p class="generated">Page generated at {TS_MARK}</p>'
            "</footer>"
        )
        body.append("</body>\n</html>\n")
        return "\n".join(head) + "\n" + "\n".join(body)

    @staticmethod
    def _newsletter() -> str:
        return (
            '<section class="newsletter" id="newsletter">'
            "<h2>Subscribe to our newsletter</h2>"
            "<p>Subscribe to our newsletter and get the week's best stories, hand-picked by "
            "our editors, delivered to your inbox every Friday. No spam, unsubscribe at any "
            "time.</p>"
            '<form action="/newsletter" method="post">'
            f'<input type="hidden" name="csrf_token" value="{CSRF_MARK}">'
            '<input type="email" name="email" placeholder="you@example.com">'
            '<button type="submit">Subscribe</button></form></section>\n'
        )

    def _tag_links(self, tags: Iterable[str], prefix: str = "/tag/") -> str:
        return " ".join(
            self._a(f"{prefix}{t}", self.model.tag_names.get(t, t), ' rel="tag"') for t in tags
        )

    # -- articles --------------------------------------------------------------------------

    def _block_html(self, block: Block, ids: set[str] | None = None) -> str:
        if block.kind == "lead":
            return f'<p class="lead">{escape(block.text)}</p>'
        if block.kind in ("h2", "h3"):
            hid = base = _heading_id(block.text)
            if ids is not None:
                n = 1
                while hid in ids:
                    n += 1
                    hid = f"{base}-{n}"
                ids.add(hid)
            return f'<{block.kind} id="{hid}">{escape(block.text)}</{block.kind}>'
        if block.kind == "p":
            text = escape(block.text)
            if block.link is not None:
                target = self.model.articles[block.link]
                href = self.article_href(block.link, block.variant)
                text += f" See also: {self._a(href, target.title)}."
            return f"<p>{text}</p>"
        if block.kind == "ul":
            return "<ul>" + "".join(f"<li>{escape(x)}</li>" for x in block.items) + "</ul>"
        if block.kind == "table":
            head, *rows = block.rows
            out = ["<table>", "<thead><tr>"]
            out += [f"<th>{escape(c)}</th>" for c in head]
            out.append("</tr></thead><tbody>")
            for row in rows:
                out.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>")
            out.append("</tbody></table>")
            return "".join(out)
        if block.kind == "pre":
            return f"<pre><code>{escape(block.text)}</code></pre>"
        raise ValueError(f"unknown block kind {block.kind!r}")

    def article_body(self, view: ArticleView) -> str:
        """Inner HTML of ``<article>``: title, byline, blocks, product box and reviews."""
        meta = view.meta
        minutes = max(1, round(view.words / 200))
        date = meta.published
        parts = [
            f"<h1>{escape(meta.title)}</h1>",
            f'<p class="byline">By <span class="author">{escape(meta.author)}</span> · '
            f'<time datetime="{date:%Y-%m-%d}">{date.day} {date:%B %Y}</time> · '
            f"{minutes} min read</p>",
        ]
        ids = {"main", "comments", "newsletter", "cookie-banner"}
        parts += [self._block_html(b, ids) for b in view.blocks]
        if view.price_cents is not None:
            stock = "In stock" if view.in_stock else "Out of stock"
            parts.append(
                '<div class="product">'
                f'<p class="price">Price: {format_price(view.price_cents)}</p>'
                f'<p class="stock">{stock}</p></div>'
            )
        if view.reviews:
            parts.append('<section class="reviews"><h2>Reader updates</h2>')
            parts += [f'<p class="review">{escape(r)}</p>' for r in view.reviews]
            parts.append("</section>")
        if view.whitespace:
            return _reflow(parts, view.whitespace)
        return "\n".join(parts)

    def article_page(self, view: ArticleView, mode: str = "article") -> str:
        """``mode``: ``article`` (canonical), ``print`` (verbatim copy, whose
        ``rel=canonical`` names the article, as real print pages do) or ``syndicated``."""
        meta = view.meta
        m = self.model
        canonical = self.origin + meta.path if mode in ("article", "print") else None
        tools = [f'<p class="tags">Filed under: {self._tag_links(meta.tags)}</p>']
        share_url = _attr(self.origin + meta.path)
        tools.append(
            '<div class="share">Share this article: '
            f'<a href="https://twitter.com/intent/tweet?url={share_url}">Twitter</a> '
            f'<a href="https://www.facebook.com/sharer/sharer.php?u={share_url}">Facebook</a> '
            f'<a href="https://www.linkedin.com/shareArticle?url={share_url}">LinkedIn</a> '
            f'<a href="mailto:?subject={_attr(meta.title)}">Email</a></div>'
        )
        if meta.has_print:
            tools.append(
                f'<p class="print"><a href="/print/{meta.slug}">Print this article</a></p>'
            )
        if meta.has_syndicated:
            tools.append(
                f'<p class="syndication"><a href="/syndicated/{meta.slug}">'
                "Also published in our partner edition</a></p>"
            )
        if meta.has_private:
            tools.append(
                f'<p class="internal"><a href="/private/{meta.slug}">Internal draft notes</a></p>'
            )
        if meta.redirect_to is not None:
            target = m.articles[meta.redirect_to]
            tools.append(
                f'<p class="shortlink">Short link to a related story: '
                f'<a href="/redirect/{target.slug}">{escape(target.title)}</a></p>'
            )
        main = (
            f'<nav class="breadcrumbs"><a href="/">Home</a> &rsaquo; '
            f"{self._tag_links(meta.tags[:1])} &rsaquo; {escape(meta.title)}</nav>\n"
            f'<article class="post">\n{self.article_body(view)}\n</article>\n'
            + "\n".join(tools)
            + '\n<section id="comments" class="comments"><h2>Comments</h2>'
            "<p>Comments are closed for this article.</p></section>"
        )
        related = "".join(
            f"<li>{self._a(self.article_href(j, meta.i * 5 + k), m.articles[j].title)}</li>"
            for k, j in enumerate(meta.related)
        )
        sidebar = (
            f'<section class="related"><h2>Related articles</h2><ul>{related}</ul></section>\n'
        )
        if mode == "syndicated":
            sidebar += f"<p>Syndicated from {SITE_NAME} with permission.</p>\n"
        ld = {
            "@context": "https://schema.org",
            "@type": "Article",
            "headline": meta.title,
            "author": {"@type": "Person", "name": meta.author},
            "datePublished": meta.published.isoformat(),
        }
        ld_json = json.dumps(ld).replace("</", "<\\/")
        return self.layout(
            title=meta.title,
            main=main,
            description=meta.summary,
            canonical=canonical,
            og_type="article",
            sidebar=sidebar,
            head_extra=f'<script type="application/ld+json">{ld_json}</script>',
        )

    def private_page(self, i: int) -> str:
        meta = self.model.articles[i]
        ids: set[str] = set()
        body = "\n".join(self._block_html(b, ids) for b in self.model.private_blocks(i))
        title = f"Draft notes: {meta.title}"
        main = f'<article class="draft">\n<h1>{escape(title)}</h1>\n{body}\n</article>'
        return self.layout(title=title, main=main, description="Internal draft.", chrome=False)

    # -- listings --------------------------------------------------------------------------

    @property
    def listing_pages(self) -> int:
        return max(1, -(-self.model.pages // PER_PAGE))

    @staticmethod
    def listing_path(page: int) -> str:
        return "/articles" if page == 1 else f"/articles?page={page}"

    def _teasers(self, ids: Sequence[int], style: str) -> str:
        items = []
        for n, j in enumerate(ids):
            a = self.model.articles[j]
            if style == "root":
                href = a.path
            elif style == "up":
                href = f"..{a.path}"
            else:
                href = ("articles/", "./articles/", "/articles/")[n % 3] + a.slug
            items.append(
                f'<li><h2 class="teaser">{self._a(href, a.title)}</h2>'
                f"<p>{escape(a.summary)}</p></li>"
            )
        return '<ol class="teasers">\n' + "\n".join(items) + "\n</ol>"

    def home(self) -> str:
        m = self.model
        pages = self.listing_pages
        archive = " ".join(
            self._a(self.listing_path(p).lstrip("/"), f"Page {p}") for p in range(1, pages + 1)
        )
        tags = " ".join(
            self._a(f"tag/{t}", f"{m.tag_names.get(t, t)} ({len(ids)})")
            for t, ids in sorted(m.tags.items())
        )
        main = (
            f"<h1>{SITE_NAME}</h1>\n"
            "<p>Essays, guides and reviews on everything from espresso to Roman roads.</p>\n"
            "<h2>Latest articles</h2>\n"
            + self._teasers(range(min(PER_PAGE, m.pages)), "relative")
            + f'\n<p><a href="articles">Browse all {m.pages} articles</a></p>\n'
            f'<h2>Archive</h2>\n<p class="archive">{archive}</p>\n'
            f'<h2>Topics</h2>\n<p class="topics">{tags}</p>\n'
            "<h2>Downloads</h2>\n<ul>"
            '<li><a href="files/report.pdf">Annual report (PDF)</a></li>'
            '<li><a href="api/data.json">Open data (JSON)</a></li></ul>'
            "<h2>International editions</h2>\n<ul>"
            + "".join(f'<li><a href="intl/{name}">{name}</a></li>' for name in CHARSET_PAGES)
            + "</ul>"
        )
        return self.layout(
            title=SITE_NAME,
            main=main,
            description="Essays, guides and reviews.",
            canonical=self.origin + "/",
        )

    def listing(self, page: int) -> str | None:
        pages = self.listing_pages
        if not 1 <= page <= pages:
            return None
        start = (page - 1) * PER_PAGE
        ids = range(start, min(start + PER_PAGE, self.model.pages))
        nav = []
        if page > 1:
            nav.append(self._a(self.listing_path(1), "First"))
            nav.append(self._a(self.listing_path(page - 1), "Previous", ' rel="prev"'))
        for p in range(max(1, page - 3), min(pages, page + 3) + 1):
            nav.append(
                f"<strong>{p}</strong>" if p == page else self._a(self.listing_path(p), str(p))
            )
        if page < pages:
            nav.append(self._a(self.listing_path(page + 1), "Next", ' rel="next"'))
            nav.append(self._a(self.listing_path(pages), "Last"))
        title = f"All articles — page {page} of {pages}"
        main = (
            f"<h1>{escape(title)}</h1>\n"
            + self._teasers(ids, "relative")
            + f'\n<nav class="pagination">{" ".join(nav)}</nav>'
        )
        return self.layout(
            title=title,
            main=main,
            description=f"Article archive, page {page}.",
            canonical=self.origin + self.listing_path(page),
        )

    def tag(self, tag: str) -> str | None:
        ids = self.model.tags.get(tag)
        if not ids:
            return None
        name = self.model.tag_names.get(tag, tag)
        title = f"Articles tagged “{name}”"
        main = f"<h1>{escape(title)}</h1>\n" + self._teasers(ids, "up")
        return self.layout(
            title=title,
            main=main,
            description=f"{len(ids)} articles about {name}.",
            canonical=f"{self.origin}/tag/{tag}",
        )

    # -- small pages -----------------------------------------------------------------------

    def about(self) -> str:
        main = (
            "<h1>About us</h1>\n"
            f"<p>{SITE_NAME} is a small test publication. "
            'Write to us at <span id="contact">editor at localhost</span>.</p>'
        )
        return self.layout(title="About us", main=main, description="About.", chrome=False)

    @staticmethod
    def error_page(status: int) -> str:
        reason = {404: "Page not found", 410: "Gone"}.get(status, "Error")
        detail = {
            404: "The page you requested could not be found.",
            410: "This article has been permanently removed.",
        }.get(status, "Something went wrong.")
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{status} {reason}</title></head>\n<body><h1>{status} {reason}</h1>"
            f'<p>{detail}</p><p><a href="/">Back to the home page</a></p></body></html>\n'
        )

    def data_json(self) -> bytes:
        m = self.model
        data = {
            "site": SITE_NAME,
            "articles": [
                {"title": a.title, "path": a.path, "tags": list(a.tags)} for a in m.articles[:10]
            ],
            "total": m.pages,
        }
        return json.dumps(data, indent=2).encode()


def _reflow(parts: Sequence[str], n: int) -> str:
    """Join article HTML with whitespace variant ``n``: only spaces and line breaks change."""
    sep = "\n" * (1 + n % 2) + " " * (n + 1)
    width = 40 + 9 * (n % 7)
    out = []
    for part in parts:
        if part.startswith("<pre>"):
            out.append(part)  # whitespace inside <pre> is content
        else:
            out.append(
                textwrap.fill(
                    part,
                    width=width,
                    break_long_words=False,
                    break_on_hyphens=False,
                    subsequent_indent="  ",
                )
            )
    return sep.join(out)


def fake_pdf() -> bytes:
    """A tiny but well-formed one-page PDF."""
    stream = b"BT /F1 18 Tf 72 720 Td (Localhost Journal annual report) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for num, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (num, obj)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)
