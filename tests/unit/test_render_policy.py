"""HTTP or browser (SPEC F-RENDER): script-shell detection and the render policy, pure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from knowledge_crawler.sync.render import (
    GIVE_UP_AFTER,
    browser_after,
    browser_first,
    host_verdict,
)
from knowledge_crawler.transform.shell import (
    SHELL_MAX_WORDS,
    ShellSigns,
    render_helped,
    shell_signs,
)

DEV_SET = Path(
    os.environ.get("KC_EXTRACTION_DEV")
    or Path(__file__).resolve().parents[3] / "shared" / "extraction-dev"
)

REACT_SHELL = b"""<!doctype html><html><head><title>App</title>
<script src="/static/js/main.js"></script></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript>
<div id="root"></div></body></html>"""

NEXT_SHELL = b"""<html><head><title>Shop</title></head><body>
<header>Shop home cart</header>
<div id="__next"><!-- app --></div>
<script src="/a.js"></script><script src="/b.js"></script><script>boot()</script>
</body></html>"""

SCRIPTS_ONLY = b"""<html><body><p>Loading the catalogue</p>
<script src="/1.js"></script><script src="/2.js"></script><script src="/3.js"></script>
</body></html>"""

ARTICLE = (
    b"<html><head><title>Post</title><script src='/analytics.js'></script></head><body>"
    b"<div id='app'><article><h1>Post</h1><p>"
    + b"Every ordinary paragraph of a server-rendered page has words. " * 12
    + b"</p></article></div><script>track()</script></body></html>"
)

THIN_NO_SCRIPT = b"<html><body><p>Gone fishing.</p></body></html>"


@pytest.mark.parametrize(
    ("body", "shell"),
    [
        (REACT_SHELL, True),  # empty root, noscript asking for JavaScript
        (NEXT_SHELL, True),  # empty root holding only a comment
        (SCRIPTS_ONLY, True),  # little text, three scripts
        (ARTICLE, False),  # a mounted app with its text already in the HTML
        (THIN_NO_SCRIPT, False),  # thin, but no script could add anything
        (b"", False),
        (b"   ", False),
        (b"\x89PNG\r\n\x1a\n\x00\x00", False),
    ],
)
def test_script_shells_are_told_from_pages(body: bytes, shell: bool) -> None:
    assert shell_signs(body).is_shell is shell


def test_signs_count_only_visible_words() -> None:
    signs = shell_signs(
        b"<html><head><title>t i t l e</title><style>a b c</style></head><body>"
        b"<p>one two three</p><script>var x = 'not words';</script>"
        b"<noscript>enable JavaScript please</noscript><template>x y</template></body></html>"
    )
    assert signs == ShellSigns(words=3, scripts=1, empty_root=False, noscript=True)


def test_an_app_root_with_children_is_not_empty() -> None:
    assert not shell_signs(b"<div id='app'><span></span></div><script></script>").empty_root
    assert not shell_signs(b"<div id='app'>text</div>").empty_root
    assert shell_signs(b"<div id='APP'>  </div>").empty_root


def test_a_long_page_is_never_a_shell_whatever_its_scripts() -> None:
    body = b"<div id='root'></div>" + b"<script></script>" * 20
    body += b"<p>" + b"word " * SHELL_MAX_WORDS + b"</p>"
    assert not shell_signs(body).is_shell


def test_no_real_server_rendered_page_of_the_dev_set_is_taken_for_a_shell() -> None:
    """The labelled pages are real articles fetched with plain HTTP: rendering any of
    them in ``auto`` mode would be wasted work."""
    if not DEV_SET.is_dir():  # like the quality gate: missing data fails in CI
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"labelled pages not found at {DEV_SET}")
        pytest.skip("labelled pages not found")
    pages = sorted(DEV_SET.rglob("*.html"))
    assert pages, "no pages in the labelled set"
    shells = [p.name for p in pages if shell_signs(p.read_bytes()).is_shell]
    assert shells == []


def test_render_helped_needs_clearly_more_words() -> None:
    assert render_helped(0, 20)
    assert not render_helped(0, 19)
    assert render_helped(100, 200)
    assert not render_helped(100, 199)


@pytest.mark.parametrize(
    ("mode", "known", "verdict", "first"),
    [
        ("http", False, True, False),
        ("playwright", False, None, True),
        ("playwright", True, None, False),  # stored with validators: conditional GET first
        ("auto", False, None, False),
        ("auto", False, True, True),
        ("auto", False, False, False),
        ("auto", True, True, False),
    ],
)
def test_browser_first(mode: str, known: bool, verdict: bool | None, first: bool) -> None:
    assert browser_first(mode, known=known, host_verdict=verdict) is first


@pytest.mark.parametrize(
    ("mode", "status", "is_html", "shell", "verdict", "after"),
    [
        ("playwright", 200, True, False, None, True),  # changed or new: render
        ("playwright", 304, False, False, None, False),  # not modified: no browser
        ("playwright", 404, True, False, None, False),
        ("playwright", 200, False, False, None, False),  # a PDF, JSON...
        ("auto", 200, True, True, None, True),
        ("auto", 200, True, True, True, True),
        ("auto", 200, True, True, False, False),  # rendering never helped on this host
        ("auto", 200, True, False, True, False),  # not a shell
        ("auto", 304, False, False, True, False),
        ("http", 200, True, True, True, False),
    ],
)
def test_browser_after(
    mode: str, status: int, is_html: bool, shell: bool, verdict: bool | None, after: bool
) -> None:
    assert (
        browser_after(mode, status=status, is_html=is_html, shell=shell, host_verdict=verdict)
        is after
    )


def test_host_verdict() -> None:
    assert host_verdict(0, 0) is None
    assert host_verdict(0, GIVE_UP_AFTER - 1) is None
    assert host_verdict(0, GIVE_UP_AFTER) is False
    assert host_verdict(1, 100) is True
