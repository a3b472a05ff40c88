"""JavaScript-rendered pages: article text that only a browser running the page's script sees.

Every article ``i`` has two *script shells* whose HTML holds none of its text: a generic
``Loading…`` title, an empty ``<div id="app"></div>``, a ``<noscript>`` notice, the external
``/js/app.js`` and an inline script that builds ``<article>`` inside ``#app`` with
``textContent`` and sets ``document.title``:

* ``/js/inline/<i>``: the content is a JSON literal in the inline script, built on
  ``DOMContentLoaded``;
* ``/js/fetch/<i>``: the script waits for ``load``, then 150 ms, then fetches
  ``/js/data/<i>.json?v=<version>`` (``version`` is a hash of the content, so the shell changes
  when the data does), so a browser that stops at ``load`` sees an empty ``#app``.

Both shells reference an image, a web font and a video under ``/js/asset/`` (resources a
crawler's browser should block; the server counts the requests for them).  ``/js/`` links
every shell.  Nothing else on the site links here.

The content (:class:`JsArticle`) is the article's current title, its lead and paragraphs and
reader updates (so ``text``, ``rewrite`` and ``append`` mutations change it; ``price``,
``stock``, ``whitespace`` and ``case`` do not), plus a code block with indented lines and a
list with a nested list, both generated per article.  Stdlib only; no state here.
"""

from __future__ import annotations

import hashlib
import json
import random
import struct
import zlib
from dataclasses import dataclass
from html import escape
from typing import Any, Final

from ._content import ArticleView, Prose

__all__ = [
    "APP_JS",
    "ASSETS",
    "JsArticle",
    "data_json",
    "fetch_shell",
    "index_page",
    "inline_shell",
    "js_article",
]

_AFTER_CODE: Final = 1  # the code block follows the second paragraph
_AFTER_LIST: Final = 3  # the list follows the fourth paragraph
FETCH_DELAY_MS: Final = 150

ListItems = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class JsArticle:
    """What the script of article ``i``'s shells builds, in document order (see ``blocks``)."""

    i: int
    title: str
    paragraphs: tuple[str, ...]
    code: str
    #: ``(item text, nested item texts)``; at least one item has nested items
    items: ListItems

    def blocks(self) -> list[dict[str, Any]]:
        """``p``, ``code`` and ``list`` blocks in the order the script appends them."""
        code = {"type": "code", "text": self.code}
        items = [
            {"text": text, "items": [{"text": sub, "items": []} for sub in nested]}
            for text, nested in self.items
        ]
        listing = {"type": "list", "items": items}
        out: list[dict[str, Any]] = []
        for k, text in enumerate(self.paragraphs):
            out.append({"type": "p", "text": text})
            if k == _AFTER_CODE:
                out.append(code)
            if k == _AFTER_LIST:
                out.append(listing)
        if len(self.paragraphs) <= _AFTER_CODE:
            out.append(code)
        if len(self.paragraphs) <= _AFTER_LIST:
            out.append(listing)
        return out

    def data(self) -> dict[str, Any]:
        """The JSON the scripts read: ``{"i", "title", "blocks"}``."""
        return {"i": self.i, "title": self.title, "blocks": self.blocks()}

    def json_text(self) -> str:
        return json.dumps(self.data(), ensure_ascii=False, separators=(",", ":"))

    @property
    def version(self) -> str:
        """Short hash of the content: the fetch shell's cache-busting ``v`` parameter."""
        return hashlib.sha256(self.json_text().encode()).hexdigest()[:12]

    def data_path(self) -> str:
        return f"/js/data/{self.i}.json?v={self.version}"

    def expected(self) -> dict[str, Any]:
        """What a browser ends with: ``title`` (also the document title), ``paragraphs``,
        ``code`` (the ``<pre><code>`` text), ``items`` (every ``<li>``'s own text in document
        order, nested ones after their parent) and ``list`` (the nesting)."""
        flat: list[str] = []
        for text, nested in self.items:
            flat.append(text)
            flat.extend(nested)
        return {
            "i": self.i,
            "title": self.title,
            "paragraphs": list(self.paragraphs),
            "code": self.code,
            "items": flat,
            "list": [{"text": text, "items": list(nested)} for text, nested in self.items],
            "version": self.version,
            "inline": f"/js/inline/{self.i}",
            "fetch": f"/js/fetch/{self.i}",
            "data": self.data_path(),
        }


def js_article(view: ArticleView, seed: int) -> JsArticle:
    """The JS pages' content for an article in its current state (``view``)."""
    meta = view.meta
    paragraphs = [b.text for b in view.blocks if b.kind in ("lead", "p")]
    paragraphs += view.reviews
    rng = random.Random(f"{seed}:js:{meta.i}")
    prose = Prose(rng, meta.topic, meta.secondary)
    name = meta.topic.slug.replace("-", "_")
    limit = rng.randint(2, 40)
    code = (
        f"def {name}_score(entries):\n"
        "    total = 0\n"
        "    for entry in entries:\n"
        f"        if entry.weight > {limit}:\n"
        "            total += entry.weight\n"
        "    return total"
    )
    items: ListItems = (
        (prose.phrase(), ()),
        (prose.phrase(), (prose.phrase(), prose.phrase())),
        (prose.phrase(), ()),
    )
    return JsArticle(meta.i, meta.title, tuple(paragraphs), code, items)


# -- bodies --------------------------------------------------------------------------------


def _script_json(text: str) -> str:
    """JSON safe inside ``<script>``: ``</`` cannot close the element."""
    return text.replace("</", "<\\/")


#: Builds ``<article>`` inside ``#app`` from the data (textContent only) and sets the title.
_BUILD_JS: Final = """\
function kcList(items) {
  var ul = document.createElement("ul");
  items.forEach(function (item) {
    var li = document.createElement("li");
    if (typeof item === "string") { item = {text: item, items: []}; }
    li.appendChild(document.createTextNode(item.text));
    if (item.items && item.items.length) { li.appendChild(kcList(item.items)); }
    ul.appendChild(li);
  });
  return ul;
}
function kcBuild(data) {
  var article = document.createElement("article");
  var h1 = document.createElement("h1");
  h1.textContent = data.title;
  article.appendChild(h1);
  data.blocks.forEach(function (block) {
    if (block.type === "p") {
      var p = document.createElement("p");
      p.textContent = block.text;
      article.appendChild(p);
    } else if (block.type === "code") {
      var pre = document.createElement("pre");
      var code = document.createElement("code");
      code.textContent = block.text;
      pre.appendChild(code);
      article.appendChild(pre);
    } else if (block.type === "list") {
      article.appendChild(kcList(block.items));
    }
  });
  document.getElementById("app").appendChild(article);
  document.title = data.title;
}
"""

#: Served as ``/js/app.js``: a harmless helper; the shells work without it.
APP_JS: Final = b"""\
/* Localhost Journal app helpers */
window.kcApp = {
  loadedAt: Date.now(),
  ready: function () { return !!document.querySelector("#app article"); }
};
"""

_SHELL_TOP: Final = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Loading…</title>
<style>@font-face{font-family:K;src:url(/js/asset/font.woff2) format("woff2")} \
body{font-family:K}</style>
<script src="/js/app.js"></script>
</head>
<body>
<img src="/js/asset/pixel.png" alt="">
<video src="/js/asset/clip.mp4" preload="auto" muted></video>
<div id="app"></div>
<noscript>This page needs JavaScript.</noscript>
<script>
"""
_SHELL_BOTTOM: Final = "</script>\n</body>\n</html>\n"


def inline_shell(article: JsArticle) -> bytes:
    """``/js/inline/<i>``: the content as a JSON literal, built on ``DOMContentLoaded``."""
    script = (
        f"var KC_DATA = {_script_json(article.json_text())};\n"
        + _BUILD_JS
        + 'document.addEventListener("DOMContentLoaded", function () { kcBuild(KC_DATA); });\n'
    )
    return (_SHELL_TOP + script + _SHELL_BOTTOM).encode()


def fetch_shell(article: JsArticle) -> bytes:
    """``/js/fetch/<i>``: ``load``, 150 ms, then fetch the data (versioned URL) and build."""
    url = json.dumps(article.data_path())
    script = (
        _BUILD_JS
        + 'window.addEventListener("load", function () {\n'
        + "  setTimeout(function () {\n"
        + f"    fetch({url})\n"
        + "      .then(function (r) { if (!r.ok) { throw new Error(r.status); }"
        + " return r.json(); })\n"
        + "      .then(kcBuild);\n"
        + f"  }}, {FETCH_DELAY_MS});\n"
        + "});\n"
    )
    return (_SHELL_TOP + script + _SHELL_BOTTOM).encode()


def data_json(article: JsArticle) -> bytes:
    """``/js/data/<i>.json``."""
    return json.dumps(article.data(), ensure_ascii=False, indent=1).encode()


def index_page(titles: list[str]) -> bytes:
    """``/js/``: a server-rendered page linking both shells of every article."""
    items = "\n".join(
        f'<li>{escape(title)}: <a href="/js/inline/{i}">inline edition</a> · '
        f'<a href="/js/fetch/{i}">fetched edition</a></li>'
        for i, title in enumerate(titles)
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        "<title>Script editions | Localhost Journal</title>\n</head>\n<body>\n<main>\n"
        "<h1>Script editions</h1>\n"
        "<p>Every article of the Localhost Journal is also published as a page that your "
        "browser assembles with JavaScript. The inline edition carries the article inside "
        "the page's script; the fetched edition downloads it a moment after the page has "
        "finished loading.</p>\n"
        f'<ul class="js-editions">\n{items}\n</ul>\n</main>\n</body>\n</html>\n'
    ).encode()


# -- assets (what a crawler's browser should block; /js/asset/<name>) ------------------------


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def _pixel_png() -> bytes:
    """A real 1x1 transparent RGBA PNG."""
    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    pixels = zlib.compress(b"\x00\x00\x00\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", pixels)
        + _png_chunk(b"IEND", b"")
    )


def _woff2() -> bytes:
    """A bare WOFF2 header (no tables): enough to be sniffed as a font, not to render."""
    fields = (0x00010000, 48, 0, 0, 12, 0, 1, 0, 0, 0, 0, 0, 0)
    return b"wOF2" + struct.pack(">IIHHIIHHIIIII", *fields)


def _mp4() -> bytes:
    """An ``ftyp`` box and an empty ``free`` box: an MP4 prefix without media."""
    ftyp = b"ftyp" + b"isom" + struct.pack(">I", 0x200) + b"isom" + b"mp41"
    return struct.pack(">I", 4 + len(ftyp)) + ftyp + struct.pack(">I", 8) + b"free"


#: ``/js/asset/<name>`` -> (body, content type); the server counts requests per path.
ASSETS: Final[dict[str, tuple[bytes, str]]] = {
    "pixel.png": (_pixel_png(), "image/png"),
    "font.woff2": (_woff2(), "font/woff2"),
    "clip.mp4": (_mp4(), "video/mp4"),
}
