"""A labelled set of real documentation pages installed on the machine (not the dev set).

    .venv/bin/python tests/eval/docs_set.py label      # (re)write docs-set.json
    .venv/bin/python tests/eval/docs_set.py score      # F1 per kind and split

The pages are what Debian, Node.js, npm and the Rust toolchain install as HTML: Node.js
and npm references, the Valgrind manual (DocBook), libxslt's tutorial and gtk-doc API
reference, libffi's manual (texinfo), the Rust book, reference, edition guide and
embedded book (mdBook), the Cargo book, rustdoc module pages, and Rust by Example in
Japanese. They are read where they are installed (``docs-set.json`` records each page's
path and SHA-256; a page that is missing or changed is skipped, never scored).

Labels: for each site generator, a person chose the element that holds the page's
documentation (``main``, ``#apicontent``, the DocBook ``body`` ...) and the chrome
inside it that is not content (previous/next links, tables of contents, "copy"
buttons, rustdoc's source links); the label is that element's text, in document order,
block by block. The labeller is an independent ``itertext`` walk, not the extractor.
Spot-checked by reading pages and labels side by side.

Split: whole generators are held out (``heldout``: libffi texinfo, gtk-doc, npm, Rust
by Example in Japanese, the edition guide), and one page in three of the others
(by a hash of the path); tuning reads only ``tune`` pages. Kind: ``docs`` (reference
and manual pages), ``tutorial`` (book chapters), ``non-english``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LABELS = HERE / "docs-set.json"
RUST = Path.home() / ".rustup/toolchains/stable-x86_64-unknown-linux-gnu/share/doc/rust/html"

#: never text, wherever they are
_DROP_ALWAYS = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "button",
    "input",
    "select",
    "textarea",
    "head",
)
_BLOCK = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "dd",
        "details",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tr",
        "td",
        "th",
        "ul",
        "caption",
        "br",
    ]
)


#: DocBook XSL's previous/next bars and tables of contents
_DOCBOOK_CHROME = ".//div[@class='navheader'] | .//div[@class='navfooter'] | .//div[@class='toc']"


@dataclass(frozen=True)
class Family:
    name: str
    kind: str
    files: tuple[str, ...]  # globs
    content: str  # XPath of the element holding the page's documentation
    drop: str = ""  # XPath (relative, "|"-joined) of chrome inside it
    heldout: bool = False
    limit: int = 8
    every: bool = False  # the label is every element ``content`` finds, in document order
    encoding: str | None = None  # the page's real encoding, where its markup misleads lxml


FAMILIES = (
    Family(
        "nodejs-api",
        "docs",
        ("/usr/share/doc/nodejs/api/*.html",),
        "//*[@id='apicontent']",
        ".//*[contains(@class,'srclink')] | .//a[@class='mark']",
    ),
    Family(
        "npm-docs",
        "docs",
        ("/usr/lib/node_modules/npm/docs/output/commands/*.html",),
        "//*[@id='_content']",
        limit=6,
    ),
    Family(
        "valgrind-docbook",
        "docs",
        ("/usr/share/doc/valgrind/html/*.html",),
        "//body",
        ".//table[@class='nav'] | .//*[contains(@class,'toc')]",
    ),
    Family(
        "libxslt-docbook",
        "tutorial",
        ("/usr/share/doc/libxslt1-dev/html/tutorial*/*.html",),
        "//body",
        ".//*[contains(@class,'toc') or contains(@class,'legalnotice')]",
        limit=2,
    ),
    Family(
        "gtk-doc",
        "docs",
        ("/usr/share/doc/libxslt1-dev/gtk-doc/html/libxslt/*.html",),
        "//body",
        ".//table[contains(@class,'navigation')] | .//*[contains(@class,'toc')]",
        limit=5,
    ),
    Family(
        "libffi-texinfo",
        "docs",
        ("/usr/share/doc/libffi8/html/*.html",),
        "//body",
        ".//*[contains(@class,'header')] | .//*[contains(@class,'mini-toc')]"
        " | .//*[contains(@class,'contents')]",
        limit=6,
    ),
    Family(
        "rust-book",
        "tutorial",
        (f"{RUST}/book/ch*.html",),
        "//main",
        ".//*[contains(@class,'nav-wrapper') or contains(@class,'nav-wide-wrapper')]",
        limit=10,
    ),
    Family(
        "rust-reference",
        "docs",
        (f"{RUST}/reference/*.html",),
        "//main",
        ".//*[contains(@class,'nav-wrapper') or contains(@class,'nav-wide-wrapper')]"
        " | .//div[@class='rule'] | .//*[contains(@class,'tests-popup')]",
        limit=8,
    ),
    Family(
        "cargo-book",
        "docs",
        (f"{RUST}/cargo/commands/*.html", f"{RUST}/cargo/reference/*.html"),
        "//main",
        ".//*[contains(@class,'nav-wrapper') or contains(@class,'nav-wide-wrapper')]",
        limit=8,
    ),
    Family(
        "edition-guide",
        "tutorial",
        (f"{RUST}/edition-guide/*/*.html",),
        "//main",
        ".//*[contains(@class,'nav-wrapper') or contains(@class,'nav-wide-wrapper')]",
        limit=5,
    ),
    Family(
        "embedded-book",
        "tutorial",
        (f"{RUST}/embedded-book/*/*.html",),
        "//main",
        ".//*[contains(@class,'nav-wrapper') or contains(@class,'nav-wide-wrapper')]",
        limit=5,
    ),
    Family(
        "rustdoc-module",
        "docs",
        (f"{RUST}/std/*/index.html",),
        "//*[@id='main-content']",
        ".//*[contains(@class,'out-of-band') or contains(@class,'rustdoc-breadcrumbs')"
        " or contains(@class,'sub-heading')] | .//summary[contains(@class,'hideme')]",
        limit=6,
    ),
    Family(
        "rust-by-example-ja",
        "non-english",
        (f"{RUST}/rust-by-example/ja/*.html", f"{RUST}/rust-by-example/ja/*/*.html"),
        "//main",
        ".//*[contains(@class,'nav-wrapper') or contains(@class,'nav-wide-wrapper')]",
        limit=8,
    ),
    # Added in the third pass (December 2026, packages installed by `make eval-docs`).
    # Tune: Sphinx (Python), DocBook (PostgreSQL, Debian reference), AsciiDoc (git).
    Family(
        "python-sphinx",
        "docs",
        ("/usr/share/doc/python3/html/library/*.html",),
        "//*[@role='main']",
        ".//a[@class='headerlink'] | .//div[contains(@class,'toctree-wrapper')]",
        limit=12,
    ),
    Family(
        "python-tutorial",
        "tutorial",
        ("/usr/share/doc/python3/html/tutorial/*.html",),
        "//*[@role='main']",
        ".//a[@class='headerlink'] | .//div[contains(@class,'toctree-wrapper')]",
        limit=8,
    ),
    Family(
        "postgresql-docbook",
        "docs",
        ("/usr/share/doc/postgresql-doc-15/html/*.html",),
        "//body",
        ".//div[@class='navheader'] | .//div[@class='navfooter'] | .//*[@class='toc']",
        limit=14,
    ),
    Family(
        "git-asciidoc",
        "docs",
        ("/usr/share/doc/git-doc/git-*.html",),
        "//body",
        ".//div[@id='footer']",
        limit=10,
    ),
    Family(
        "debian-reference",
        "tutorial",
        ("/usr/share/debian-reference/ch*.en.html",),
        "//body",
        ".//div[@class='navheader'] | .//div[@class='navfooter'] | .//div[@class='toc']",
        limit=4,
    ),
    # Held out whole in the third pass until measured once, then tuned on: Sphinx with
    # its own theme (Django) and the classic theme (Debian developer's reference),
    # Publican (Debian handbook, English and French), the Apache manual's own XSLT
    # (English and French), SQLite's hand-written pages, gtk-doc of GLib.
    Family(
        "django-sphinx",
        "docs",
        (
            "/usr/share/doc/python-django-doc/html/topics/*.html",
            "/usr/share/doc/python-django-doc/html/ref/*.html",
        ),
        "//div[@id='yui-main']",
        ".//a[@class='headerlink'] | .//div[contains(@class,'toctree-wrapper')]",
        limit=6,
    ),
    Family(
        "developers-reference",
        "docs",
        ("/usr/share/developers-reference/*.html",),
        "//*[@role='main']",
        ".//a[@class='headerlink'] | .//div[contains(@class,'toctree-wrapper')]",
        limit=4,
    ),
    Family(
        "debian-handbook",
        "tutorial",
        ("/usr/share/doc/debian-handbook/html/en-US/*.html",),
        "//body",
        ".//*[@id='banner'] | .//*[@id='title'] | .//ul[contains(@class,'docnav')]"
        " | .//*[contains(@class,'toc')]",
        limit=6,
    ),
    Family(
        "debian-handbook-fr",
        "non-english",
        ("/usr/share/doc/debian-handbook/html/fr-FR/*.html",),
        "//body",
        ".//*[@id='banner'] | .//*[@id='title'] | .//ul[contains(@class,'docnav')]"
        " | .//*[contains(@class,'toc')]",
        limit=4,
    ),
    Family(
        "apache-manual",
        "docs",
        (
            "/usr/share/doc/apache2-doc/manual/en/*.html",
            "/usr/share/doc/apache2-doc/manual/en/mod/*.html",
        ),
        "//div[@id='page-content']",
        ".//div[@class='toplang'] | .//*[@id='quickview'] | .//a[@class='permalink']"
        " | .//div[@class='top']",
        limit=6,
    ),
    Family(
        "apache-manual-fr",
        "non-english",
        ("/usr/share/doc/apache2-doc/manual/fr/*.html",),
        "//div[@id='page-content']",
        ".//div[@class='toplang'] | .//*[@id='quickview'] | .//a[@class='permalink']"
        " | .//div[@class='top']",
        limit=3,
    ),
    Family(
        "sqlite-docs",
        "docs",
        ("/usr/share/doc/sqlite3/lang_*.html",),
        "//div[@class='fancy']",
        limit=5,
    ),
    Family(
        "glib-gtk-doc",
        "docs",
        ("/usr/share/gtk-doc/html/glib/glib-*.html",),
        "//body",
        ".//table[contains(@class,'navigation')] | .//*[contains(@class,'toc')]"
        " | .//div[@class='footer']",
        limit=4,
    ),
    # Held out whole (installed and labelled after the families above were measured;
    # no extraction output of them read): DocBook books of other sites (Debian FAQ in
    # English, French and German, New Maintainers' Guide in English, French and
    # Japanese, kernel handbook, APT user's guide), Publican (Securing Debian Manual),
    # texi2html (zsh manual), Sphinx (Debian Policy).
    Family(
        "debian-faq",
        "docs",
        ("/usr/share/doc/debian/FAQ/*.en.html",),
        "//body",
        _DOCBOOK_CHROME,
        heldout=True,
        limit=5,
    ),
    Family(
        "debian-faq-fr-de",
        "non-english",
        ("/usr/share/doc/debian/FAQ/fr/*.html", "/usr/share/doc/debian/FAQ/de/*.html"),
        "//body",
        _DOCBOOK_CHROME,
        heldout=True,
        limit=4,
    ),
    Family(
        "maint-guide",
        "tutorial",
        ("/usr/share/doc/maint-guide/html/*.en.html",),
        "//body",
        _DOCBOOK_CHROME,
        heldout=True,
        limit=5,
    ),
    Family(
        "maint-guide-fr-ja",
        "non-english",
        (
            "/usr/share/doc/maint-guide-fr/html/*.fr.html",
            "/usr/share/doc/maint-guide-ja/html/*.ja.html",
        ),
        "//body",
        _DOCBOOK_CHROME,
        heldout=True,
        limit=4,
    ),
    Family(
        "kernel-handbook",
        "tutorial",
        ("/usr/share/doc/debian-kernel-handbook/kernel-handbook.html/*.html",),
        "//body",
        _DOCBOOK_CHROME,
        heldout=True,
        limit=4,
    ),
    Family(
        "apt-guide",
        "tutorial",
        ("/usr/share/doc/apt-doc/guide.html/*.html", "/usr/share/doc/apt-doc/offline.html/*.html"),
        "//body",
        _DOCBOOK_CHROME,
        heldout=True,
        limit=3,
    ),
    Family(
        "harden-doc",
        "tutorial",
        ("/usr/share/doc/harden-doc/html/en-US/*.html",),
        "//body",
        ".//*[@id='banner'] | .//*[@id='title'] | .//ul[contains(@class,'docnav')]"
        " | .//*[contains(@class,'toc')]",
        heldout=True,
        limit=5,
    ),
    Family(
        "zsh-texi2html",
        "docs",
        ("/usr/share/doc/zsh-common/html/*.html",),
        "//body",
        ".//table[@class='header'] | .//table[@class='menu'] | .//p[@class='footer']"
        " | .//*[starts-with(normalize-space(.), 'This document was generated')]",
        heldout=True,
        limit=5,
    ),
    Family(
        "debian-policy",
        "docs",
        ("/usr/share/doc/debian-policy/policy.html/*.html",),
        "//*[@role='main']",
        ".//a[@class='headerlink'] | .//div[contains(@class,'toctree-wrapper')]",
        heldout=True,
        limit=5,
    ),
)


def _text(element: object) -> str:
    """The element's text, one line per block (a newline in the source is a space),
    the lines of ``pre`` as they are."""
    out: list[str] = []
    brk = "\x00"

    def add(text: str | None) -> None:
        if text:
            out.append(text.replace("\n", " "))

    def walk(el: object) -> None:
        tag = getattr(el, "tag", None)
        if not isinstance(tag, str):
            return
        block = tag in _BLOCK
        if block:
            out.append(brk)
        if tag == "pre":
            out.append("".join(el.itertext()).replace("\n", brk))  # type: ignore[attr-defined]
            out.append(brk)
            return
        add(el.text)  # type: ignore[attr-defined]
        for child in el:  # type: ignore[attr-defined]
            walk(child)
            add(child.tail)
        if block:
            out.append(brk)

    walk(element)
    lines = (" ".join(line.split()) for line in "".join(out).split(brk))
    return "\n".join(line for line in lines if line)


def label_page(path: Path, family: Family) -> str | None:
    from lxml import etree, html

    if str(ROOT) not in sys.path:  # run as a script; called once a page
        sys.path.insert(0, str(ROOT))
    from knowledge_crawler.transform.prepass import drop_keeping_tail

    raw = path.read_bytes()
    tree = html.fromstring(raw.decode(family.encoding) if family.encoding else raw)
    found = tree.xpath(family.content)
    if not found:
        return None
    texts = []
    for content in found if family.every else found[:1]:
        etree.strip_elements(content, *_DROP_ALWAYS, with_tail=False)
        if family.drop:
            for el in content.xpath(family.drop):
                if el.getparent() is not None:
                    el.getparent().remove(el)  # tail text is layout whitespace here
        for el in content.xpath(".//*[@hidden or @aria-hidden='true']"):
            if el.getparent() is not None:
                drop_keeping_tail(el)  # the text after a hidden icon is the page's
        texts.append(_text(content))
    text = "\n".join(t for t in texts if t)
    return text if len(text.split()) >= 50 else None


def _split(path: Path, family: Family) -> str:
    if family.heldout:
        return "heldout"
    digest = hashlib.sha256(str(path).encode()).digest()
    return "heldout" if digest[0] % 3 == 0 else "tune"


def label_all() -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for family in FAMILIES:
        files = sorted({p for pattern in family.files for p in Path("/").glob(pattern[1:])})
        files = [p for p in files if 4_000 < p.stat().st_size < 300_000]
        step = max(1, len(files) // family.limit)
        taken = 0
        for path in files[::step]:
            if taken >= family.limit:
                break
            label = label_page(path, family)
            if label is None:
                continue
            taken += 1
            rows.append(
                {
                    "id": hashlib.sha256(str(path).encode()).hexdigest()[:12],
                    "path": str(path),
                    "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                    "family": family.name,
                    "kind": family.kind,
                    "split": _split(path, family),
                    "label": label,
                }
            )
    return rows


def load(split: str | None = None, labels: Path = LABELS) -> list[dict[str, str]]:
    """Labelled pages whose file is installed and unchanged (``split``: only those).

    A page's path is absolute, or relative to the checkout (``.eval/...``)."""
    if not labels.is_file():
        return []
    rows = json.loads(labels.read_text(encoding="utf-8"))
    out = []
    for row in rows:
        if split is not None and row["split"] != split:
            continue
        path = ROOT / row["path"]
        if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == row["sha256"]:
            out.append({**row, "path": str(path)})
    return out


def score(
    split: str | None = None, *, per_page: bool = False, labels: Path = LABELS
) -> dict[tuple[str, str], dict]:
    """F1 (the dev set's metric) of the stored form per (kind, split), and per page."""
    sys.path.insert(0, str(ROOT))
    from knowledge_crawler.transform.extract import extract
    from tests.eval.test_quality_gate import score as metric

    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for row in load(split, labels):
        pair = (row["label"], extract(Path(row["path"]).read_bytes()).cleaned().text)
        groups.setdefault((row["kind"], row["split"]), []).append(pair)
        groups.setdefault(("all", row["split"]), []).append(pair)
        if per_page:
            m = metric([pair])
            print(
                f"{row['split']:8s} {row['family']:20s} F1 {m['f1']:.3f} "
                f"P {m['precision']:.3f} R {m['recall']:.3f} {row['path'][-60:]}"
            )
    return {key: {**metric(pairs), "pages": len(pairs)} for key, pairs in groups.items()}


def print_scores(argv: list[str], labels: Path = LABELS) -> None:
    """``score [tune|heldout|all] [-v]``: F1 per kind and split (``-v``: and per page)."""
    split = argv[1] if len(argv) > 1 and argv[1] != "-v" else "tune"
    result = score(None if split == "all" else split, per_page="-v" in argv, labels=labels)
    for (kind, sp), agg in sorted(result.items()):
        print(
            f"{sp:8s} {kind:12s} pages {agg['pages']:3d}  P {agg['precision']:.4f}"
            f"  R {agg['recall']:.4f}  F1 {agg['f1']:.4f}"
        )


def main(argv: list[str]) -> int:
    if argv[:1] == ["label"]:
        rows = label_all()
        LABELS.write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n")
        print(f"{len(rows)} pages labelled -> {LABELS}")
        return 0
    if argv[:1] == ["score"]:
        print_scores(argv)
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
