"""Unit tests for knowledge_crawler.transform.extract (and its decode/title/language/render
modules) and the ``extract`` CLI command."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge_crawler.cli.extract import extract as extract_cmd
from knowledge_crawler.transform.clean import clean_text
from knowledge_crawler.transform.decode import decode_html, looks_like_html
from knowledge_crawler.transform.extract import Extraction, extract
from knowledge_crawler.transform.render import markdown_to_text

LOREM = (
    "The committee met on Tuesday to discuss the new budget for the city's public "
    "libraries, which have seen record numbers of visitors over the past year. "
)

ARTICLE = f"""<!DOCTYPE html>
<html lang="en-GB">
<head>
  <meta charset="utf-8">
  <title>Libraries get a bigger budget | The Daily Example</title>
  <meta property="og:site_name" content="The Daily Example">
  <script>var tracking = "SCRIPTTEXT";</script>
  <style>.x {{ color: red }}</style>
</head>
<body>
<header><nav><ul>
  <li><a href="/">Home</a></li><li><a href="/news">News</a></li>
  <li><a href="/sport">Sport</a></li><li><a href="/weather">Weather</a></li>
</ul></nav></header>
<div id="cookie-banner" class="cookie-consent">
  <p>We use cookies to improve your experience. Accept all cookies?</p>
  <button>Accept</button>
</div>
<main>
<article>
  <h1>Libraries get a bigger budget</h1>
  <p>{LOREM * 3}</p>
  <h2>What the money pays for</h2>
  <p>{LOREM * 2}</p>
  <ul>
    <li>Longer opening hours on weekends</li>
    <li>New children's books in every branch</li>
    <li>Free wireless internet access</li>
  </ul>
  <h2>Where it comes from</h2>
  <p>The spending is split as follows, according to the <a href="https://example.com/report.pdf">
  published report</a> <img src="https://example.com/chart.png" alt="">:</p>
  <table>
    <tr><th>Source</th><th>Amount</th></tr>
    <tr><td>City council</td><td>2.1 million</td></tr>
    <tr><td>Regional grant</td><td>0.9 million</td></tr>
  </table>
  <p>The library system also published the script it uses to count visitors:</p>
  <pre><code>def count_visitors(log):
    return len(set(log))
</code></pre>
  <p>{LOREM * 2}</p>
  <div class="share-buttons social-share">
    <a href="https://facebook.com/share">Share on Facebook</a>
    <a href="https://twitter.com/share">Share on Twitter</a>
  </div>
</article>
<section class="related-articles">
  <h3>Related stories</h3>
  <ul><li><a href="/a">Museum opens new wing</a></li>
  <li><a href="/b">Parks get new benches</a></li></ul>
</section>
<div class="newsletter-signup">
  <p>Subscribe to our newsletter for the latest headlines every morning!</p>
  <form><input type="email"><button>Sign up</button></form>
</div>
</main>
<footer><p>Copyright 2024 The Daily Example. All rights reserved. Privacy policy.</p></footer>
</body>
</html>
"""


@pytest.fixture(scope="module")
def article() -> Extraction:
    return extract(ARTICLE, url="https://example.com/news/libraries")


# --------------------------------------------------------------------------- content


def test_article_keeps_structure(article: Extraction) -> None:
    md = article.markdown
    assert "## What the money pays for" in md
    assert "## Where it comes from" in md
    assert "- Longer opening hours on weekends" in md
    assert "- Free wireless internet access" in md
    assert "| Source | Amount |" in md
    assert "| City council | 2.1 million |" in md
    assert "```\ndef count_visitors(log):\n    return len(set(log))\n```" in md
    assert article.headings == ("What the money pays for", "Where it comes from")
    assert article.language == "en"


def test_article_drops_boilerplate(article: Extraction) -> None:
    for junk in (
        "SCRIPTTEXT",
        "color: red",
        "Weather",
        "We use cookies",
        "Share on Facebook",
        "Related stories",
        "Museum opens new wing",
        "Subscribe to our newsletter",
        "All rights reserved",
    ):
        assert junk not in article.markdown, junk
        assert junk not in article.text, junk


def test_no_urls_only_link_text(article: Extraction) -> None:
    assert "published report" in article.markdown
    for text in (article.markdown, article.text):
        assert "http" not in text
        assert "](" not in text
        assert "chart.png" not in text


def test_text_is_plain_same_content(article: Extraction) -> None:
    text = article.text
    assert "#" not in text
    assert "```" not in text
    assert "What the money pays for" in text
    assert "Longer opening hours on weekends" in text
    assert "\n\n" in text
    assert article.word_count == len(text.split()) or article.word_count > 100
    # the headline is the title, not repeated as body text
    assert not text.startswith("Libraries get a bigger budget")


def _opening(head: str) -> str:
    paragraphs = "".join(f"<p>Paragraph {i}: {LOREM}</p>" for i in range(4))
    page = (
        "<html><head><title>Paying loans to banks that failed</title></head><body><article>"
        f"{head}{paragraphs}</article></body></html>"
    )
    return extract(page).markdown.split("Paragraph 0")[0]


def test_a_kicker_heading_above_the_headline_goes_with_it() -> None:
    assert _opening("<h2>Your money</h2><h1>Paying loans to banks that failed</h1>") == ""


def test_what_is_not_a_short_heading_above_the_headline_stays() -> None:
    kept = "<p>pg_amproc</p><h1>Paying loans to banks that failed</h1>"
    assert "pg_amproc" in _opening(kept)
    long_heading = "<h2>A heading of more than eight words is a part of the text</h2>"
    assert "more than eight words" in _opening(
        long_heading + "<h1>Paying loans to banks that failed</h1>"
    )
    assert "Other" in _opening("<h2>Other</h2><h2>Another</h2><h3>Third</h3>")


def test_a_teaser_copy_of_the_lead_above_the_headline_goes_with_it() -> None:
    headline = "<h1>Paying loans to banks that failed</h1>"
    paragraphs = "".join(f"<p>Paragraph {i}: {LOREM}</p>" for i in range(4))
    page = (
        "<html><head><title>Paying loans to banks that failed</title></head><body><article>"
        f"<p>Paragraph 0: {LOREM}</p>{headline}{paragraphs}</article></body></html>"
    )
    markdown = extract(page).markdown
    assert markdown.count("Paragraph 0") == 1 and "Paying loans" not in markdown
    once = "<p>A line above the headline that the story does not repeat.</p>"
    assert "does not repeat" in _opening(once + headline)


def test_a_dateline_above_the_headline_goes_with_it() -> None:
    dated = "<p>October 22, 2019 report</p><h1>Paying loans to banks that failed</h1>"
    assert _opening(dated) == ""
    line = "<p>A line of seven words above it stays.</p>"
    assert "seven words" in _opening(line + "<h1>Paying loans to banks that failed</h1>")
    season = "<p>Our summer 2019 trip</p>"  # 'mer' inside a word is no month
    assert "summer 2019" in _opening(season + "<h1>Paying loans to banks that failed</h1>")


def test_a_standfirst_set_as_a_heading_goes_but_a_section_heading_stays() -> None:
    deck = "<h4>Simon Wittenberg travels to Rome for a taste of polo and of whisky.</h4>"
    assert "Simon Wittenberg" not in _opening(deck)
    for heading in (
        "<h2>What the money pays for</h2>",
        "<h2>How do I install the package on a machine without a network?</h2>",
        "<h2>Short sentence.</h2>",
    ):
        assert heading[4:-5] in _opening(heading)


def test_a_breadcrumb_trail_above_the_headline_goes_with_it() -> None:
    crumbs = "<p>Home &gt; Money &gt; Paying loans to banks that failed</p>"
    assert _opening(crumbs + "<h1>Paying loans to banks that failed</h1>") == ""
    two = "<p>Profits rose &gt; 5% and costs fell</p>"  # one '>' is no trail
    assert "Profits rose" in _opening(two + "<h1>Paying loans to banks that failed</h1>")


def test_a_box_of_key_points_that_opens_the_story_goes() -> None:
    items = "<li>Borrowers still owe the money</li><li>Now to the state</li>"
    box = f"<p>STORY HIGHLIGHTS</p><ul>{items}</ul>"
    assert _opening(box) == ""
    listed = "<p>What to bring:</p><ul><li>A passport</li><li>A pen</li></ul>"
    assert "A passport" in _opening(listed)  # any other list stays


def test_a_line_that_says_where_the_text_first_appeared_goes() -> None:
    assert _opening("<p>This article originally appeared on VICE US.</p>") == ""
    line = "<p>The bank first appeared on the list in 2009, the regulator said.</p>"
    assert "first appeared" in _opening(line)


def test_a_deck_after_the_headline_goes_whatever_it_ends_with() -> None:
    headline = "<h1>Paying loans to banks that failed</h1>"
    deck = "<h2>Borrowers of a failed bank still owe the money, and now to the state</h2>"
    question = "<h3>Do the borrowers of a failed bank still owe it anything at all?</h3>"
    assert _opening(headline + deck) == ""
    assert _opening(headline + deck + question) == ""  # a deck in two headings
    section = "<h2>What the money pays for</h2>"
    assert "What the money pays for" in _opening(headline + section)
    # without a headline above it, a long heading is a section's name unless a sentence
    assert "Borrowers of a failed bank" in _opening(deck)


def test_a_byline_desk_or_credit_line_above_the_first_paragraph_goes() -> None:
    for line in ("Von Gregory Lipinski", "USA TODAY Sports", "Courtesy G4", "Handout", "CNN"):
        assert _opening(f"<p>{line}</p>") == "", line
    for line in ("Not this time.", "Hello, world", "Introduction to the port", "bank notes"):
        assert line in _opening(f"<p>{line}</p>"), line  # a sentence, or five words


def test_inline_emphasis_dropped() -> None:
    html = f"<html><body><article><p>{LOREM}<b>bold words</b> and <i>italic</i>.</p>"
    html += f"<p>{LOREM * 2}</p></article></body></html>"
    result = extract(html)
    assert "bold words and italic." in result.markdown
    assert "**" not in result.markdown


def test_ordered_list_and_quote() -> None:
    html = (
        f"<html><body><article><p>{LOREM * 2}</p><ol><li>First step here</li>"
        f"<li>Second step here</li></ol><blockquote><p>A quoted sentence that matters "
        f"a great deal to the story.</p></blockquote><p>{LOREM}</p></article></body></html>"
    )
    md = extract(html).markdown
    assert "1. First step here\n2. Second step here" in md
    assert "> A quoted sentence" in md


def test_markdown_reduces_to_the_text_form(article: Extraction) -> None:
    from knowledge_crawler.transform.render import markdown_headings, markdown_to_text

    assert markdown_to_text(article.markdown) == article.text
    assert markdown_headings(article.markdown) == article.headings


def test_cleaned_is_the_stored_form_in_every_field() -> None:
    html = (
        f"<html><body><article><p>{LOREM * 2}</p><h2>Subscribe to our newsletter</h2>"
        f"<h2>Details</h2><ol><li>First step here</li><li>Second step here</li></ol>"
        f"<p>Page generated at 14:32:07</p></article></body></html>"
    )
    raw = extract(html)
    assert "Page generated" in raw.markdown and "Subscribe to our newsletter" in raw.headings
    stored = raw.cleaned()
    assert "Page generated" not in stored.markdown + stored.text
    assert "newsletter" not in stored.markdown + stored.text
    assert stored.headings == ("Details",)
    assert "1. First step here\n2. Second step here" in stored.markdown
    assert "First step here\nSecond step here" in stored.text
    assert stored.word_count == raw.word_count - 10  # 4 + 6 words of the two banners
    assert (stored.title, stored.language) == (raw.title, raw.language)
    assert stored.cleaned() == stored


def test_public_names_still_importable_from_extract() -> None:
    from knowledge_crawler.transform import decode
    from knowledge_crawler.transform import extract as extract_module

    assert extract_module.decode_html is decode.decode_html
    assert extract_module.looks_like_html is decode.looks_like_html
    assert set(extract_module.__all__) >= {
        "Extraction",
        "decode_html",
        "extract",
        "looks_like_html",
    }


# --------------------------------------------------------------------------- title


@pytest.mark.parametrize(
    ("head", "body", "expected"),
    [
        ("<title>Big news today | Site Name</title>", "<h1>Big news today</h1>", "Big news today"),
        (
            '<title>Big news today - Site Name</title><meta property="og:title" '
            'content="Big news today">',
            "",
            "Big news today",
        ),
        (
            '<title>Site Name: home</title><meta property="og:title" content="The real headline">',
            "",
            "The real headline",
        ),
        (
            '<title>A long story about the economy | Site</title><meta property="og:site_name"'
            ' content="Site">',
            "",
            "A long story about the economy",
        ),
        ("<title>Only a title</title>", "", "Only a title"),
        ("", "<h1>Only an h1</h1>", "Only an h1"),
        ("", "", None),
    ],
)
def test_title_selection(head: str, body: str, expected: str | None) -> None:
    html = f"<html><head>{head}</head><body>{body}<p>{LOREM * 3}</p></body></html>"
    assert extract(html).title == expected


# --------------------------------------------------------------------------- charsets

SMART = "\u201cSmart quotes\u201d, caf\u00e9 \u2014 na\u00efve r\u00e9sum\u00e9; it\u2019s fine."
SAMPLES = {
    "cp1252": SMART + " The quick brown fox jumps over the lazy dog again and again. " * 3,
    "shift_jis": "日本語のテキストです。これはテストの文章で、東京の天気は晴れです。" * 3,
    "gb2312": "这是一个中文测试文本，今天北京的天气很好。我们去公园散步吧。" * 3,  # noqa: RUF001
    "koi8-r": "Это тестовый текст на русском языке. Погода в Москве сегодня хорошая. " * 3,
}


def _page(text: str, meta: str = "") -> str:
    return f"<html><head>{meta}<title>t</title></head><body><p>{text}</p></body></html>"


@pytest.mark.parametrize("encoding", sorted(SAMPLES))
@pytest.mark.parametrize("where", ["header", "meta", "http-equiv", "sniff"])
def test_decode_html_charsets(encoding: str, where: str) -> None:
    text = SAMPLES[encoding]
    meta = {
        "meta": f'<meta charset="{encoding}">',
        "http-equiv": f'<meta http-equiv="Content-Type" content="text/html; charset={encoding}">',
    }.get(where, "")
    body = _page(text, meta).encode(encoding)
    header = f"text/html; charset={encoding}" if where == "header" else "text/html"
    assert text in decode_html(body, header)
    if where != "header":
        assert text in decode_html(body)


def test_decode_html_header_beats_meta_and_bom_beats_all() -> None:
    text = SAMPLES["cp1252"]
    body = _page(text, '<meta charset="utf-8">').encode("cp1252")
    assert text in decode_html(body, "text/html; charset=windows-1252")
    bom = b"\xef\xbb\xbf" + _page("caf\u00e9").encode("utf-8")
    assert "caf\u00e9" in decode_html(bom, "text/html; charset=iso-8859-1")


def test_decode_html_latin1_label_is_windows_1252() -> None:
    body = _page("it\u2019s").encode("cp1252")
    assert "it\u2019s" in decode_html(body, "text/html; charset=iso-8859-1")


def test_decode_html_never_raises_on_junk() -> None:
    assert isinstance(decode_html(bytes(range(256)) * 4), str)
    assert isinstance(decode_html(b"<p>x</p>", "text/html; charset=no-such-codec"), str)
    assert decode_html(b"") == ""


def test_extract_bytes_uses_decoding() -> None:
    text = SAMPLES["shift_jis"] * 3
    result = extract(_page(text, '<meta charset="shift_jis">').encode("shift_jis"))
    assert "東京の天気は晴れです" in result.text
    assert result.language == "ja"


# --------------------------------------------------------------------------- html sniffing


@pytest.mark.parametrize(
    "body",
    [
        b"<!DOCTYPE html><html><body>x</body></html>",
        b"\n\n  <html lang=en><p>x",
        b"\xef\xbb\xbf<!doctype html><title>x</title>",
        b"<div class=a>fragment</div>",
        "<html><body>é</body></html>".encode("utf-16"),
    ],
)
def test_looks_like_html_true(body: bytes) -> None:
    assert looks_like_html(body)
    assert looks_like_html(body, "text/html; charset=utf-8")


@pytest.mark.parametrize(
    "body",
    [
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b"\xff\xd8\xff\xe0\x00\x10JFIF",
        b"GIF89a\x01\x00",
        b'{"title": "<b>not html</b>", "items": [1, 2]}',
        b"[1, 2, 3]",
        b"PK\x03\x04\x14\x00\x06\x00",
        b"\x1f\x8b\x08\x00\x00\x00",
        b"",
        b"   \n",
        b"just some plain text without any markup",
        b'<?xml version="1.0"?><rss version="2.0"><channel></channel></rss>',
        bytes(range(256)),
    ],
)
def test_looks_like_html_false(body: bytes) -> None:
    assert not looks_like_html(body)


def test_looks_like_html_content_type_wins() -> None:
    html = b"<html><body>x</body></html>"
    assert not looks_like_html(html, "application/pdf")
    assert not looks_like_html(html, "image/png")
    assert not looks_like_html(html, "application/json")
    assert looks_like_html(html, "text/html")


# --------------------------------------------------------------------------- robustness


@pytest.mark.parametrize(
    "html",
    [
        "",
        "   ",
        "<",
        "<<<>>>",
        "\x00\x01\x02",
        "<html></html>",
        "plain text",
        "<p>unclosed <b>tags <i>everywhere",
        "<div>" * 5000 + "deep text" + "</div>" * 5000,
        "<html><body>" + "<div><p><span>" * 2000 + "deep" + "</span></p></div>" * 2000,
        "<table>" * 300 + "cell" + "</table>" * 300,
        '<?xml version="1.0" encoding="utf-8"?><html><body><p>x</p></body></html>',
        "<html><body>" + "<p>word " * 20000 + "</body></html>",
        b"\xff\xfe\x00\xd8garbage\x80\x81",
    ],
)
def test_junk_does_not_crash(html: str | bytes) -> None:
    result = extract(html)
    assert isinstance(result, Extraction)
    assert isinstance(result.markdown, str)
    assert isinstance(result.text, str)


def test_wrong_type_raises_value_error() -> None:
    with pytest.raises(ValueError):
        extract(123)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        extract(None)  # type: ignore[arg-type]


def test_empty_page_gives_empty_markdown() -> None:
    result = extract("<html><head><title>Empty</title></head><body></body></html>")
    assert result.markdown == ""
    assert result.text == ""
    assert result.word_count == 0
    assert result.title == "Empty"


# --------------------------------------------------------------------------- CLI


def test_cli_single_file_markdown_and_text(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(ARTICLE, encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(extract_cmd, [str(page)])
    assert res.exit_code == 0, res.output
    assert "## What the money pays for" in res.output
    res = runner.invoke(extract_cmd, ["--format", "text", str(page)])
    assert res.exit_code == 0
    assert "What the money pays for" in res.output
    assert "## " not in res.output


@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "binary"])
def test_cli_bad_input_exit_2(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "x.html"
    if kind == "directory":
        target.mkdir()
    elif kind == "empty":
        target.write_bytes(b"")
    elif kind == "binary":
        target.write_bytes(b"%PDF-1.4\n\x00\x01\x02binary")
    res = CliRunner().invoke(extract_cmd, [str(target)])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("knowledge-crawler: error: ")


def test_cli_no_arguments_exit_2() -> None:
    res = CliRunner().invoke(extract_cmd, [])
    assert res.exit_code == 2
    assert "knowledge-crawler: error:" in res.output


def test_cli_batch_continues_past_bad_file(tmp_path: Path) -> None:
    src, dst = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    (src / "good.html").write_text(ARTICLE, encoding="utf-8")
    (src / "bad.html").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (src / "empty.html").write_bytes(b"")
    (src / "notes.txt").write_text("ignored", encoding="utf-8")
    res = CliRunner().invoke(extract_cmd, ["--batch", str(src), str(dst)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in dst.iterdir()) == ["good.txt"]
    out = (dst / "good.txt").read_text(encoding="utf-8")
    assert "What the money pays for" in out
    assert "## " not in out  # batch default format is text
    assert "bad.html" in res.output
    assert "empty.html" in res.output


def test_cli_batch_markdown_format(tmp_path: Path) -> None:
    src, dst = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    (src / "good.html").write_text(ARTICLE, encoding="utf-8")
    res = CliRunner().invoke(extract_cmd, ["--format", "markdown", "--batch", str(src), str(dst)])
    assert res.exit_code == 0
    assert "## What the money pays for" in (dst / "good.txt").read_text(encoding="utf-8")


def test_cli_batch_all_bad_or_missing_dir_exit_2(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "bad.html").write_bytes(b"")
    runner = CliRunner()
    assert runner.invoke(extract_cmd, ["--batch", str(src), str(tmp_path / "o")]).exit_code == 2
    res = runner.invoke(extract_cmd, ["--batch", str(tmp_path / "nope"), str(tmp_path / "o")])
    assert res.exit_code == 2
    assert "knowledge-crawler: error:" in res.output


def test_cli_module_does_not_import_scrapy_or_trafilatura() -> None:
    import subprocess
    import sys

    code = (
        "import sys, knowledge_crawler.cli.extract;"
        "bad=[m for m in ('scrapy','twisted','trafilatura') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_newline_in_the_html_source_is_whitespace_and_br_is_a_line_break() -> None:
    html = (
        "<html><body><article><h1>Wrapped source lines</h1>"
        "<p>This paragraph was wrapped\nby the <code>editor</code> at seventy\n"
        "columns, as many are.</p>"
        "<p>A poem keeps<br>its line breaks<br/>where the author put them.</p>"
        + "<p>Filler text so that the extractor sees an article here. </p>" * 5
        + "</article></body></html>"
    )
    markdown = extract(html).markdown
    assert "This paragraph was wrapped by the editor at seventy columns, as many are." in markdown
    assert "A poem keeps\nits line breaks\nwhere the author put them." in markdown


FORUM_LD = (
    '{"@context": "https://schema.org", "@type": "DiscussionForumPosting", '
    '"headline": "Tuning the carburettor"}'
)


@pytest.mark.parametrize(
    "head",
    [
        "",
        f'<script type="application/ld+json">{FORUM_LD}</script>',
        '<script type="application/ld+json">{"@type": "NewsArticle"}</script>',
        f"<script>{FORUM_LD}</script>",  # not JSON-LD
        '<script type="application/ld+json"></script>',
    ],
)
def test_trafilatura_forum_check_is_replaced_by_an_equal_one(head: str) -> None:
    import trafilatura.core as core
    from lxml import html

    extract("<html><body><p>warm up</p></body></html>")
    fast = core._forum_thread_page
    assert getattr(fast, "_kc_fast", False), "trafilatura's internals changed: see extract.py"
    page = f"<html><head>{head}</head><body><div><p>Post one</p>{head}</div></body></html>"
    tree = html.fromstring(page)
    assert fast(tree) == fast.__wrapped__(tree)
    assert fast(tree) == ("DiscussionForumPosting" in head and "ld+json" in head)


def test_a_short_page_gets_the_baseline_of_a_tree_parsed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the page's HTML at hand, trafilatura cleans the raw tree without a copy; its
    baseline fallback (for a short extraction) then runs on the page parsed again, and
    the result is the one the copy gives (extract_tree without the HTML)."""
    import knowledge_crawler.transform.extract as ex

    extract("<html><body><p>warm up</p></body></html>")
    assert ex._STATE.get("spare_raw_tree"), "trafilatura's internals changed: see extract.py"
    built: list[str | bytes] = []
    original = ex._pruned

    def pruned(html: str | bytes) -> object:
        built.append(html)
        return original(html)

    monkeypatch.setattr(ex, "_pruned", pruned)
    page = (
        "<html><body><nav>Home</nav><div><span>The text of the page sits in a span, long"
        " enough to be worth keeping.</span></div></body></html>"
    )
    assert extract(page) == ex.extract_tree(ex.parse_page(page))
    assert built == [page]
    long_page = f"<html><body><article>{_PARAS * 3}</article></body></html>"
    assert extract(long_page) == ex.extract_tree(ex.parse_page(long_page))
    assert built == [page]  # a long extraction needs no raw tree


_PARAS = "".join(
    f"<p>Paragraph {i} of the article has enough words to count as real body text here.</p>"
    for i in range(4)
)


def _md(fragment: str) -> str:
    return extract(
        f"<html><body><article>{_PARAS}{fragment}{_PARAS}</article></body></html>"
    ).markdown


def test_inline_code_in_a_list_item_stays_in_its_sentence() -> None:
    md = _md("<ul><li><code>name</code> &lt;string&gt; the file name</li></ul>")
    assert "- name <string> the file name" in md
    assert "```\nname\n```" not in md


def test_a_bare_pre_keeps_its_lines_in_a_list_item_and_at_top_level() -> None:
    md = _md("<pre>make all\n  make install</pre><ul><li>Run:<pre>cc -o x\n    x.c</pre></li></ul>")
    assert "```\nmake all\n  make install\n```" in md
    # under the item, indented as its text: the list holds the block
    assert "- Run:\n\n  ```\n  cc -o x\n      x.c\n  ```" in md


def test_code_under_a_nested_item_is_indented_to_its_depth_and_reads_back_as_written() -> None:
    md = _md(
        "<ol><li>Build:<pre><code>make\n\n  make install</code></pre>"
        "<ul><li>Then run:<pre><code>x --flag\n    y</code></pre></li></ul></li></ol>"
    )
    assert "1. Build:\n\n  ```\n  make\n\n    make install\n  ```" in md
    assert "  - Then run:\n\n    ```\n    x --flag\n        y\n    ```" in md
    stored = clean_text(md)
    assert stored == md
    text = markdown_to_text(stored)
    assert "make\n\n  make install" in text
    assert "x --flag\n    y" in text


def test_a_code_listing_figure_is_kept_with_its_language() -> None:
    md = _md(
        '<figure class="listing"><span>Filename: src/main.rs</span>'
        '<pre><code class="language-rust">fn main() {\n    run();\n}</code></pre>'
        "<figcaption>Listing 1: <code>main</code></figcaption></figure>"
    )
    assert (
        "Filename: src/main.rs\n\n```rust\nfn main() {\n    run();\n}\n```\n\nListing 1: main" in md
    )


def test_two_code_elements_in_one_pre_are_two_blocks() -> None:
    md = _md(
        '<pre><code class="language-js mjs">import a from "a";</code>'
        '<code class="language-js cjs">const a = require("a");</code></pre>'
    )
    # (trafilatura drops the classes of a <pre> it reads as a quotation: no language here)
    assert '```\nimport a from "a";\n```\n\n```\nconst a = require("a");\n```' in md


@pytest.mark.parametrize(
    ("lang", "code"), [("javascript", "let x = 1;\nx++;"), ("css", "p {\n  color: red;\n}")]
)
def test_script_like_languages_keep_their_fence_and_code(lang: str, code: str) -> None:
    pre = f'<pre><code class="language-{lang}">{code}</code></pre>'
    page = f"<html><body><article>{_PARAS}{pre}{_PARAS}</article></body></html>"
    stored = extract(page).cleaned().markdown
    assert f"```{lang}\n{code}\n```" in stored


def test_heading_permalinks_are_not_heading_text() -> None:
    md = _md(
        '<h2>Setup<a class="mark" href="#setup">#</a></h2><p>Words of the setup section here.</p>'
        "<h3>C#</h3><p>Words about the language here.</p>"
    )
    assert "## Setup\n" in md
    assert "### C#" in md


def test_a_definition_is_nested_under_its_term() -> None:
    md = _md("<dl><dt>--dry-run</dt><dd>Displays what would be updated.</dd></dl>")
    assert "- --dry-run\n  - Displays what would be updated." in md


@pytest.mark.parametrize(
    "page",
    [
        b"<html><body><p>plain</p></body></html>",
        "<html><body>\x0bcontrol and \ufffe noncharacter</body></html>".encode(),
        b"<!DOCTYPE html PUBLIC '-//W3C//DTD XHTML 1.0//EN' 'x.dtd'/>\n<html><body>d</body></html>",
        b"<?xml version='1.0' encoding='utf-8'?><html><body><p>x</p></body></html>",
        b"<html/>\n<body><p>self-closing html</p></body>",
        "<html><body><p>caf\xe9 \x01</p></body></html>".encode("cp1252"),
        "<html><body><p>utf-16 text</p></body></html>".encode("utf-16"),
        b"just text, not html",
        "\u00a0<html><body><p>no-break space first</p></body></html>".encode(),
        "  <p>caf\u00e9, a fragment</p>".encode(),
        '<html><head><meta charset="iso-8859-1"></head><body>caf\u00e9</body></html>'.encode(),
        "<html><body><p>caf\u00e9 \u20ac</p></body></html>".encode(),
        b"\xef\xbb\xbf<html><body><p>bom</p></body></html>",
        b"<html><body><p>bad \xff byte</p></body></html>",
    ],
)
def test_parse_builds_the_tree_load_html_builds(page: bytes) -> None:
    """Our parse skips a regex pass and lxml.html's Python class lookup, and keeps a
    page with HTML tags that load_html rejects as dubious (a fragment); nothing else."""
    from lxml import etree
    from trafilatura.utils import load_html

    from knowledge_crawler.transform.decode import holds_html_tags
    from knowledge_crawler.transform.extract import decode_html, parse_page

    ours = parse_page(page)
    text = decode_html(page).replace("\x00", "")
    theirs = load_html(text) if text.strip() else None
    if theirs is None and ours is not None:
        assert holds_html_tags(text[:4096].encode())
        return
    assert (ours is None) == (theirs is None)
    if ours is not None:
        assert etree.tostring(ours) == etree.tostring(theirs)
        assert hasattr(ours, "text_content")  # trafilatura reads lxml.html's methods


@pytest.mark.parametrize(
    ("body", "same"),
    [
        ("<p>caf\u00e9</p>".encode(), True),
        (b"\xef\xbb\xbf<p>bom</p>", False),
        (b"<p>bad \xff byte</p>", False),
        ("<p>caf\u00e9</p>".encode("cp1252"), False),
        ('<meta charset="iso-8859-1"><p>caf\u00e9</p>'.encode(), False),
    ],
)
def test_decode_says_when_the_bytes_are_the_texts_utf8(body: bytes, same: bool) -> None:
    from knowledge_crawler.transform.decode import decode_html_utf8

    text, utf8 = decode_html_utf8(body)
    assert text == decode_html(body)
    assert utf8 is same
    if utf8:
        assert text.encode() == body


def test_text_after_a_nested_list_stays_after_it() -> None:
    md = _md(
        "<ul><li>Colors:<ul><li>auto</li><li>never</li></ul>May also be set in config.</li>"
        "<li>next item</li></ul>"
    )
    assert "- Colors:\n  - auto\n  - never\n  May also be set in config.\n- next item" in md


def test_headings_of_a_page_without_frame_are_put_back_before_their_text() -> None:
    # DocBook: no <article>/<main>, headings nested in title divs, text in <body>
    section = (
        '<div class="sect1"><div class="titlepage"><div><h2>{n}. {title}</h2></div></div>'
        "<p>{title} section text that is long enough to count as a paragraph of the page.</p>"
        "<p>More words for the {title} section, a second paragraph of real body text.</p>"
        "</div>"
    )
    body = "".join(section.format(n=i, title=t) for i, t in enumerate(["Intro", "Usage"], 1))
    chrome = (
        '<h3><a href="/next">Next chapter</a></h3>'
        "<h4>Share</h4><p>Share section text that is long enough to count as a paragraph.</p>"
        "<h4>Share</h4>"
    )
    md = extract(f"<html><body><h1>Manual</h1>{chrome}{body}</body></html>").markdown
    assert "## 1. Intro\n\nIntro section text" in md
    assert "## 2. Usage\n\nUsage section text" in md
    assert "Next chapter" not in md and "# Share" not in md
    assert "# Manual" not in md


def test_a_link_dense_reference_table_is_kept_and_a_link_menu_table_is_not() -> None:
    uses = ", ".join(f'<a href="/ref/{i}">place number {i} where it is used</a>' for i in range(3))
    rows = "".join(f"<tr><td><code>kw{i}</code></td><td>{uses}</td></tr>" for i in range(6))
    index = f"<table><thead><tr><th>Keyword</th><th>Use</th></tr></thead>{rows}</table>"
    menu_cells = "".join(
        f'<td><a href="/s/{i}">Section number {i} of the site</a></td>' for i in range(4)
    )
    menu = (
        f"<table><tr><th>Menu</th><th>More</th></tr>{('<tr>' + menu_cells + '</tr>') * 4}</table>"
    )
    md = _md(index + menu)
    assert "| Keyword | Use |" in md
    assert "| kw5 | place number 0 where it is used, place number 1" in md
    assert "Section number" not in md


def test_the_rest_of_a_paragraph_after_a_pre_is_kept_in_order() -> None:
    md = _md(
        "<p>Parse the stylesheet:<pre>cur = parse(argv[i]);</pre> In this case, I cast the"
        " <i>file name</i> to a string, then the code goes on.<b>!</b><div>Next block.</div></p>"
    )
    assert (
        "Parse the stylesheet:\n\n```\ncur = parse(argv[i]);\n```\n\n"
        "In this case, I cast the file name to a string, then the code goes on.!"
    ) in md


def test_a_meta_classed_block_holding_a_table_is_kept_and_a_byline_is_not() -> None:
    history = (
        '<div class="api_metadata"><details><summary>History</summary><table>'
        "<tr><th>Version</th><th>Changes</th></tr>"
        "<tr><td>v19.0.0</td><td><p>Must be called with the object as the receiver.</p></td></tr>"
        "<tr><td>v8.5.0</td><td><p>Added in: v8.5.0</p></td></tr>"
        "</table></details></div>"
    )
    byline = '<div class="post-meta"><span>By Jane Doe, 3 March 2020</span></div>'
    md = _md(history + byline)
    assert "| v19.0.0 | Must be called with the object as the receiver. |" in md
    assert "Jane Doe" not in md


def test_a_parameter_list_of_type_links_is_kept_and_a_numbered_contents_list_is_not() -> None:
    t = '<a href="https://developer.mozilla.org/docs/Number" class="type">&lt;number&gt;</a>'
    params = f"<ul><li><code>idle</code> {t}</li><li><code>active</code> {t}</li></ul>"
    contents = "".join(f'<li>1.{i}. <a href="#q{i}">Step {i}</a></li>' for i in range(3))
    md = _md(f"{params}<p>The values are in milliseconds.</p><ul>{contents}</ul>")
    assert "- idle <number>\n- active <number>" in md
    assert "Step 1" not in md


def test_a_block_whose_only_anchor_has_no_href_is_not_a_link_block() -> None:
    # a DocBook note ends its section; <a name> (a link target, no text) made
    # trafilatura count a link with no text and delete the note
    note = (
        '<div class="sect2"><p>Save the result with the save functions of the library.</p>'
        '<div class="note"><h3><a name="id2708587"></a>Note</h3>'
        "<p>libxml also contains output functions, such as xmlSaveFile, which can be used"
        " here.</p></div></div>"
    )
    assert "such as xmlSaveFile, which can be used here." in _md(note)


def test_a_code_listing_keeps_its_file_name_and_caption_around_the_code() -> None:
    code = "\n".join(f"    let value_{i} = compute({i});" for i in range(8))
    listing = (
        '<figure class="listing" id="listing-1"><span class="file-name">Filename: src/main.rs'
        f'</span><pre><code class="language-rust">fn main() {{\n{code}\n}}</code></pre>'
        '<figcaption><a href="#listing-1">Listing 1</a>: Computing the values</figcaption>'
        "</figure>"
    )
    text = "".join(
        f"<p>Paragraph {i} of the chapter, with enough words to be text.</p>" for i in range(12)
    )
    # a page this long goes through trafilatura's main extractor, which lost both
    md = extract(f"<html><body><main>{text}{listing}{text}</main></body></html>").markdown
    assert "Filename: src/main.rs\n\n```rust\nfn main() {" in md
    assert "}\n```\n\nListing 1: Computing the values" in md


def test_a_callout_list_whose_only_links_are_in_page_images_is_kept() -> None:
    rows = "".join(
        f'<tr><td><a href="#co{i}"><img src="callouts/{i}.png" alt="{i}"></a></td>'
        f"<td><p>Free the memory used by part {i}.</p></td></tr>"
        for i in range(1, 4)
    )
    section = (
        "<div><p>After you are finished, free the memory.</p><pre>free(doc);</pre>"
        f'<div class="calloutlist"><table>{rows}</table></div></div>'
    )
    text = "".join(
        f"<p>Paragraph {i} of the chapter, with enough words to be text.</p>" for i in range(12)
    )
    md = extract(f"<html><body><div>{text}{section}{text}</div></body></html>").markdown
    assert "Free the memory used by part 2." in md


_GTK_DOC_ENTRY = (
    '<hr/><div class="refsect2"><h3><a name="{name}"/>{name} ()</h3>'
    '<pre class="programlisting">{sig}</pre><p>{doc}</p></div>'
)


def _gtk_doc_page() -> str:
    """A gtk-doc reference page, as libxslt ships it: no frame element, a navigation
    table, a synopsis of every signature, then an entry per function repeating its
    signature (links to types inside the code, one line per parameter via <br>)."""
    add_sig = (
        'int\txsltAddKey\t\t(<a href="types.html#style">xsltStylesheetPtr</a> style, <br/>'
        "\t\t\t\t const xmlChar * name)"
    )
    free_sig = 'void\txsltFreeKeys\t\t(<a href="types.html#style">xsltStylesheetPtr</a> style)'
    macro = (
        '<div class="refsect2"><h3><a name="NODE_IS_KEYED">Macro </a>NODE_IS_KEYED</h3>'
        '<pre class="programlisting">#define <a href="#NODE_IS_KEYED">NODE_IS_KEYED</a>;\n'
        "</pre><p>check for bit 15 set</p></div>"
    )
    return (
        '<html><body><table class="navigation" width="100%"><tr><td><a href="up.html">'
        '<img alt="Up" src="up.png"/></a></td><th>libxslt Reference Manual</th></tr></table>'
        "<h2>keys</h2><p>keys - interface for the key matching used in key() and template"
        " matches, implementation of the key mechanism.</p>"
        '<div class="refsynopsisdiv"><h2>Synopsis</h2><pre class="synopsis">'
        "#define NODE_IS_KEYED;\n"
        f"{add_sig};\n{free_sig};\n</pre></div>"
        '<div class="refsect1"><h2>Description</h2></div>'
        f'<div class="refsect1"><h2>Details</h2><div class="refsect2">{macro}'
        + _GTK_DOC_ENTRY.format(name="xsltAddKey", sig=add_sig, doc="add a key definition")
        + _GTK_DOC_ENTRY.format(name="xsltFreeKeys", sig=free_sig, doc="free up the keys")
        + "</div></div></body></html>"
    )


def test_a_reference_page_keeps_code_it_repeats_and_the_headings_over_it() -> None:
    md = extract(_gtk_doc_page()).markdown
    add = "int\txsltAddKey\t\t(xsltStylesheetPtr style, \n\t\t\t\t const xmlChar * name)"
    # the synopsis, and each entry's own signature under its heading, with its sentence
    assert md.count(add) == 2, md
    assert md.count("void\txsltFreeKeys\t\t(xsltStylesheetPtr style)") == 2, md
    assert f"### xsltAddKey ()\n\n```\n{add}\n```\n\nadd a key definition" in md
    assert "## Details\n\n### Macro NODE_IS_KEYED\n\n```\n#define NODE_IS_KEYED;\n```" in md
    assert "check for bit 15 set" in md
    assert "## Synopsis\n\n```\n#define NODE_IS_KEYED;" in md
    # the navigation bar is not content
    assert "libxslt Reference Manual" not in md


def test_a_line_break_in_code_is_a_new_line_once() -> None:
    md = _md("<p>Call it as:</p><pre>f(a,<br>  b)<br>\ng(c)</pre>")
    assert "```\nf(a,\n  b)\ng(c)\n```" in md


def test_an_embedded_post_is_quoted_content_and_a_share_widget_is_not() -> None:
    tweet = (
        '<div class="social-media-embed"><blockquote class="twitter-tweet" data-lang="en">'
        "<p>Yes this is real and the state spent half a million dollars on the slogan"
        ' <a href="https://t.co/x">https://t.co/x</a></p>&mdash; Dianna (@dianna)'
        ' <a href="https://twitter.com/dianna/status/1">November 18, 2019</a></blockquote></div>'
    )
    share = (
        '<div class="social-share"><a href="https://twitter.com/intent/tweet">Tweet this</a>'
        '<a href="https://facebook.com/sharer">Share on Facebook</a></div>'
    )
    md = _md(tweet + share)
    assert "> Yes this is real and the state spent half a million dollars on the slogan" in md
    assert "Tweet this" not in md and "Share on Facebook" not in md


def test_a_bar_of_next_previous_up_links_is_navigation() -> None:
    bar = (
        '<div class="header"><p>Next: <a href="Types.html" rel="next">Types</a>, Previous: '
        '<a href="Basics.html" rel="prev">The Basics</a>, Up: <a href="Using.html" rel="up">'
        'Using libffi</a> &nbsp; [<a href="Index.html" rel="index">Index</a>]</p></div>'
    )
    cited = (
        '<p>See <a href="Types.html" rel="next">the types</a> and <a href="/faq" rel="nofollow">'
        "the questions people ask</a> before you start.</p>"
    )
    md = _md(bar + cited)
    assert "Previous" not in md and "Using libffi" not in md
    assert "See the types and the questions people ask before you start." in md


def test_a_meta_line_under_an_entry_heading_is_kept_and_a_teaser_date_is_not() -> None:
    entry = (
        "<h3><code>performance.now()</code>"
        '<span><a class="mark" href="#performance_now">#</a></span></h3>'
        '<div class="api_metadata"><span>Added in: v8.5.0</span></div>'
        "<p>Returns the current high resolution millisecond timestamp of the process.</p>"
    )
    first = '<h2>Overview</h2><div class="post-meta"><span>By Jane Doe, 3 March 2020</span></div>'
    teaser = (
        '<h2><a href="/2019/other-story">Another story worth reading today</a></h2>'
        '<div class="post-meta">November 16, 2016</div>'
    )
    md = _md(first + entry) + _md(teaser)
    assert "### performance.now()\n\nAdded in: v8.5.0\n\nReturns the current" in md
    assert "Jane Doe" not in md and "November 16, 2016" not in md


def test_a_paragraph_the_manual_repeats_is_kept_each_time_in_its_place() -> None:
    # DocBook: no frame element, so trafilatura collects loose paragraphs and skipped
    # every repeat of one it had collected already
    steps = [
        ("A named pipe is a file that acts like a pipe between two processes.", "mkfifo p"),
        ("The script command records everything the shell prints.", "script"),
        ("An alias saves typing for a command that is used often.", "alias la='ls -la'"),
    ]
    body = "".join(
        f'<div class="sect2"><p>{intro}</p><p>For example, try the following</p>'
        f'<pre class="screen">$ {command}\n$ echo done</pre></div>'
        for intro, command in steps
    )
    toc = "<p><b>Table of Contents</b></p><dl><dt>Pipes</dt></dl>"
    md = extract(f"<html><body><h1>Tutorials</h1>{toc}{body}{toc}</body></html>").markdown
    for intro, command in steps:
        assert f"{intro}\n\nFor example, try the following\n\n```\n$ {command}\n" in md, md
    assert md.count("For example, try the following") == 3
    assert md.count("Table of Contents") <= 1


def test_a_box_set_in_the_text_is_content_and_the_side_column_is_not() -> None:
    para = '<div class="para">{}</div>'
    box = (
        '<div class="sidebar"><div class="titlepage"><p class="title"><strong>BACK TO BASICS'
        '</strong> Quota</p></div><div class="para">The term quota refers to a limit on machine'
        " resources that a user is allowed to use, most often disk space.</div></div>"
    )
    column = (
        '<div class="sidebar"><ul>'
        + "".join(
            f'<li><a href="/chapter/{i}">Chapter number {i} of the book</a></li>' for i in range(6)
        )
        + "</ul></div>"
    )
    text = (
        para.format(
            "Creating accounts is one of the first actions of an administrator on a new machine."
        )
        + box
        + para.format(
            "The creation of an account fills the home directory from the skeleton template."
        )
    )
    md = extract(f"<html><body><div class='section'>{text}</div>{column}</body></html>").markdown
    assert "The term quota refers to a limit on machine resources" in md
    assert "BACK TO BASICS Quota" in md
    assert "Chapter number" not in md


def test_a_parameter_table_of_type_links_is_kept_and_a_menu_table_is_not() -> None:
    def row(name: str, text: str) -> str:
        return (
            f'<tr><td class="parameter_name"><p>{name}</p></td><td class="parameter_description">'
            f'<p>{text}</p></td><td class="parameter_annotations"> </td></tr>'
        )

    link = '<a class="link" href="glib-Arrays.html#GArray"><span class="type">GArray</span></a>'
    params = (
        '<h4>Parameters</h4><div class="informaltable"><table class="informaltable">'
        + row("array", f"a {link}")
        + row("index_", f"the index of the element in the {link}")
        + "</table></div>"
    )
    menu = (
        "<div><table>"
        + "".join(
            f'<tr><td><a href="/s/{i}">Section {i}</a></td>'
            f'<td><a href="/t/{i}">More {i}</a></td></tr>'
            for i in range(4)
        )
        + "</table></div>"
    )
    md = _md(params + menu)
    assert "| array | a GArray |" in md
    assert "| index_ | the index of the element in the GArray |" in md
    assert "Section 1" not in md


def _numbered(n: int, sentence: str, tag: str = "p") -> str:
    """``n`` paragraphs "Paragraph <i> <sentence>" (distinct, so none is a repeat)."""
    return "".join(f"<{tag}>Paragraph {i} {sentence}</{tag}>" for i in range(n))


def test_a_page_wrapped_in_other_markup_is_still_extracted() -> None:
    # An SEC filing exhibit: SGML tags before <HTML>; lxml nests the page under <type>,
    # which trafilatura's loader took for a non-HTML document and rejected.
    body = _numbered(
        5,
        "the company announced today that it has signed a definitive agreement to acquire "
        "the rights, subject to the usual closing conditions.",
        "P",
    )
    page = (
        "<DOCUMENT>\n<TYPE>EX-99.1\n<SEQUENCE>2\n<FILENAME>d752412dex991.htm\n"
        "<DESCRIPTION>EX-99.1\n<TEXT>\n<HTML><HEAD><TITLE>EX-99.1</TITLE>"
        f"</HEAD><BODY>{body}</BODY></HTML>\n</TEXT>\n</DOCUMENT>"
    )
    text = extract(page.encode()).text
    assert all(f"Paragraph {i} the company" in text for i in range(5))


def test_text_without_markup_is_not_taken_for_a_page() -> None:
    assert extract(b"Just a line of plain text, no tags at all, " * 20).text == ""


def test_an_article_whose_first_paragraph_is_loose_text_keeps_it() -> None:
    # The first paragraph is bare text after a box (emptied here: its related links are
    # boilerplate), then <p>s follow; with enough paragraph text trafilatura keeps only
    # the frame's paragraphs.
    paras = _numbered(
        8,
        "goes on about the resignation, the company and its plans for the years ahead, "
        "as the board said on Wednesday.",
    )
    page = (
        '<html><body><div class="article-content"><div class="bd"><p></p>'
        '<div class="col"></div>'
        "SAN FRANCISCO (AP) — The chief executive resigned on Wednesday, saying he "
        f"could no longer meet his duties.{paras}</div></div></body></html>"
    )
    text = extract(page).text
    assert text.startswith("SAN FRANCISCO (AP) — The chief executive resigned")
    assert all(f"Paragraph {i} goes on" in text for i in range(8))


def test_a_second_copy_of_the_text_is_stored_once() -> None:
    from tests.unit.story import STORY, paragraphs

    # a recipe page that sets its steps twice (the page's version and the print card's)
    page = (
        f"<html><body><article><div class='steps'>{paragraphs()}</div><div class='print-card'>"
        f"{paragraphs()}</div></article></body></html>"
    )
    text = extract(page).text
    assert all(text.count(p) == 1 for p in STORY)


def test_parameter_lists_that_two_functions_share_are_kept_twice() -> None:
    params = (
        "<ul><li>name: the name of the channel</li><li>handler: the function to call</li>"
        "<li>options: how the handler is called, and when</li></ul>"
    )
    body = "".join(
        f"<h2>channel.{fn}(name, handler, options)</h2><p>{fn.title()} a handler on the named "
        "channel so that every message published there reaches it, in the order sent, "
        f"until the process exits or the handler is removed again.</p>{params}"
        "<p>Returns the channel, so that calls can be chained one after another in a "
        "single statement of the program.</p>"
        for fn in ("subscribe", "unsubscribe", "watch", "unwatch")
    )
    text = extract(f"<html><body><main>{body}</main></body></html>").text
    assert text.count("handler: the function to call") == 4
