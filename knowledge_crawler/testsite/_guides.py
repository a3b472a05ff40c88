"""Guide pages whose text must be stored word for word: code, nested lists, tables and
ordinary paragraphs that talk about cookies or copyright.

Each page sits in the site's usual chrome (skip link, navigation, a cookie banner, a
newsletter box, a copyright footer); the chrome is boilerplate, the article is not.
``GUIDES`` maps a path name to ``(title, html of the article body, exact fragments)``:
every fragment must appear verbatim in the stored content. The pages are not linked
from the rest of the site, so other tests' page counts do not move; a crawl reaches
them through their URLs, ``/guides/NAME``.
"""

from __future__ import annotations

from html import escape
from typing import Final

__all__ = ["GUIDES", "guide_page"]

_CODE: Final = """def parse(lines):
    result = {}
    for line in lines:
        if not line.strip():
            continue
        key, _, value = line.partition("=")
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key.strip()] = value.strip()
    return result"""

_YAML: Final = """services:
  web:
    image: "nginx:1.27"
    ports:
      - "8080:80\""""

_COOKIES: Final = (
    "When a banner says we use cookies, it usually means two different things: a session "
    "identifier that keeps you signed in, and an analytics tag that follows you around. The "
    "law asks for consent to the second and not to the first, which is why the better "
    "banners offer two buttons instead of one."
)
_COPYRIGHT: Final = (
    "Copyright belongs to the author from the moment a work is fixed in a tangible form; "
    "registration only matters when you want to sue, and the notice at the foot of a page "
    "changes nothing about who owns the text above it."
)
_COPYRIGHT_SHORT: Final = "Copyright law differs between countries, so check yours."
_SUBSCRIBE: Final = (
    "Readers often ask why we do not simply let them subscribe to our newsletter from every "
    "page. The answer is that a form on every page is a form nobody reads, and we would "
    "rather you came back because an article was worth it."
)

GUIDES: Final[dict[str, tuple[str, str, tuple[str, ...]]]] = {
    "parsing-config-files": (
        "Parsing configuration files by hand",
        f"""<p>Most configuration formats are simpler than they look. This guide writes a
parser for <code>key=value</code> files in a dozen lines and explains each of them.</p>
<h2>The parser</h2>
<pre><code>{escape(_CODE)}</code></pre>
<p>Blank lines are skipped, the first equals sign splits a line, and a repeated key is an
error rather than a silent overwrite.</p>
<h2>The same idea in YAML</h2>
<pre><code>{escape(_YAML)}</code></pre>
<h2>What to check</h2>
<ul>
  <li>Input handling
    <ul>
      <li>blank lines</li>
      <li>lines without an equals sign
        <ul><li>reject them, or</li><li>treat them as flags</li></ul>
      </li>
    </ul>
  </li>
  <li>Output
    <ol><li>keys are stripped</li><li>values are stripped</li></ol>
  </li>
</ul>
<table>
  <tr><th>Input</th><th>Result</th></tr>
  <tr><td>a=1</td><td>{{"a": "1"}}</td></tr>
  <tr><td>a = 1 = 2</td><td>{{"a": "1 = 2"}}</td></tr>
</table>
<p>{escape(_COPYRIGHT_SHORT)}</p>""",
        (
            f"```\n{_CODE}\n```",
            f"```\n{_YAML}\n```",
            "- Input handling\n  - blank lines\n  - lines without an equals sign\n"
            "    - reject them, or\n    - treat them as flags\n- Output\n"
            "  1. keys are stripped\n  2. values are stripped",
            '| a = 1 = 2 | {"a": "1 = 2"} |',
            _COPYRIGHT_SHORT,
        ),
    ),
    "cookies-and-copyright": (
        "What cookie banners and copyright notices really mean",
        f"""<p>Two pieces of text appear at the bottom of almost every web page, and almost
nobody reads either of them. This guide reads both, slowly.</p>
<h2>Cookie banners</h2>
<p>{escape(_COOKIES)}</p>
<p>We use cookies ourselves, and this paragraph is about that fact rather than a banner:
one cookie remembers your theme, and nothing is sent to anybody else.</p>
<h2>Copyright notices</h2>
<p>{escape(_COPYRIGHT)}</p>
<p>{escape(_SUBSCRIBE)}</p>
<p>Skip to content links exist for keyboard users, and a good one is the first thing a
screen reader announces on the page, long before the navigation.</p>""",
        (
            _COOKIES,
            "We use cookies ourselves, and this paragraph is about that fact rather than a "
            "banner: one cookie remembers your theme, and nothing is sent to anybody else.",
            _COPYRIGHT,
            _SUBSCRIBE,
            "Skip to content links exist for keyboard users, and a good one is the first "
            "thing a screen reader announces on the page, long before the navigation.",
        ),
    ),
}

_CHROME_TOP: Final = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>{title} | Test Magazine</title></head><body>
<a href="#main">Skip to content</a>
<header><nav><a href="/">Home</a> <a href="/articles">Articles</a> <a href="/about">About</a>
</nav></header>
<div class="cookie-banner">We use cookies to improve your experience.
<button>Accept all cookies</button> <button>Reject all</button></div>
<main id="main"><article><h1>{title}</h1>
"""
_CHROME_BOTTOM: Final = """</article></main>
<aside class="newsletter"><p>Subscribe to our newsletter</p></aside>
<footer><p>© 2026 Test Magazine. All rights reserved.</p></footer>
</body></html>
"""


def guide_page(name: str) -> bytes | None:
    """The HTML of guide ``name``, or None when there is no such guide."""
    guide = GUIDES.get(name)
    if guide is None:
        return None
    title, body, _ = guide
    return (_CHROME_TOP.format(title=escape(title)) + body + _CHROME_BOTTOM).encode("utf-8")
