"""Source files -> validated Source records (knowledge_crawler.sources) and `validate`."""

from __future__ import annotations

import json
import re
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from knowledge_crawler.cli._common import BadInput
from knowledge_crawler.cli.validate import validate
from knowledge_crawler.errors import SeedsError
from knowledge_crawler.sources import (
    DEFAULT_TRACKING_PARAMS,
    KNOWN_KEYS,
    ApiConfig,
    Source,
    load_sources,
    parse_duration,
    resolve_seeds,
    sources_from_urls,
)

REPO = Path(__file__).resolve().parents[2]

MINIMAL = 'id = "blog"\nstart_urls = ["https://blog.example.com/"]\n'


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def one_source(tmp_path: Path, extra: str = "") -> Source:
    [source] = load_sources(write(tmp_path, "[[source]]\n" + MINIMAL + extra))
    return source


# --------------------------------------------------------------------------- errors


def src(extra: str = "") -> str:
    """A valid source 'blog' plus ``extra`` TOML lines."""
    return "[[source]]\n" + MINIMAL + extra


def urls(value: str) -> str:
    """Source 'blog' with ``start_urls = <value>``."""
    return f'[[source]]\nid = "blog"\nstart_urls = {value}\n'


def api(extra: str, url: str = "url = 'http://a.org/'\n") -> str:
    """Source 'blog' with a [source.api] table."""
    return src("[source.api]\n" + url + extra)


def defaults(extra: str) -> str:
    return "[defaults]\n" + extra + src()


DEPTH = "depth_limit"
THRESHOLD = "near_duplicate_threshold"

# (name, file body, expected source label or None, expected key or None, message fragment)
ERROR_CASES: list[tuple[str, str, str | None, str | None, str]] = [
    ("bad toml", "[[source]]\nid = \n", None, None, "line 2"),
    ("no sources", "# nothing\n", None, None, "no [[source]]"),
    ("single table", "[source]\n" + MINIMAL, None, "source", "[[source]]"),
    ("empty source list", "source = []\n", None, "source", "one or more"),
    ("top-level source key", "depth_limit = 3\n" + src(), None, DEPTH, "[[source]]"),
    ("unknown top-level", "[defualts]\n" + src(), None, "defualts", "'defaults'"),
    ("unknown key", src("depth_limt = 3\n"), "blog", "depth_limt", "'depth_limit'"),
    ("unknown key, far", src("colour = 3\n"), "blog", "colour", "unknown key"),
    ("depth type", src('depth_limit = "ten"\n'), "blog", DEPTH, "'ten'"),
    ("depth float", src("depth_limit = 2.0\n"), "blog", DEPTH, "2.0"),
    ("depth bool", src("depth_limit = true\n"), "blog", DEPTH, "true"),
    ("depth negative", src("depth_limit = -1\n"), "blog", DEPTH, "-1"),
    ("max_pages negative", src("max_pages = -5\n"), "blog", "max_pages", "-5"),
    ("follow_links str", src('follow_links = "yes"\n'), "blog", "follow_links", "true or false"),
    ("bad include", src("include = ['(unclosed']\n"), "blog", "include", "missing )"),
    ("bad exclude", src("exclude = ['*x']\n"), "blog", "exclude", "nothing to repeat"),
    ("bad boilerplate", src("boilerplate = ['[a-']\n"), "blog", "boilerplate", "'[a-'"),
    ("include string", src("include = '^https://'\n"), "blog", "include", "list"),
    ("include int", src("include = [3]\n"), "blog", "include", "3"),
    ("relative url", urls('["/index.html"]'), "blog", "start_urls", "http"),
    ("ftp url", urls('["ftp://x.org/"]'), "blog", "start_urls", "http"),
    ("no host", urls('["http:///path"]'), "blog", "start_urls", "no host"),
    ("bad port", urls('["http://a.org:99999/"]'), "blog", "start_urls", "out of range"),
    ("url with space", urls('["http://a.org/x y"]'), "blog", "start_urls", "spaces"),
    ("start_urls string", urls('"http://a.org/"'), "blog", "start_urls", "list"),
    ("start_urls empty", urls("[]"), "blog", "start_urls", "at least one"),
    ("bad sitemap", src('sitemaps = ["sitemap.xml"]\n'), "blog", "sitemaps", "http"),
    ("bad feed", src("feeds = [1]\n"), "blog", "feeds", "URL"),
    (
        "bad domain",
        src('allowed_domains = ["https://x.org/"]\n'),
        "blog",
        "allowed_domains",
        "bare",
    ),
    ("domain outside", src('allowed_domains = ["o.org"]\n'), "blog", "allowed_domains", "outside"),
    ("bad duration", src('min_interval = "soon"\n'), "blog", "min_interval", "'soon'"),
    ("duration bool", src("missing_window = false\n"), "blog", "missing_window", "duration"),
    ("zero interval", src('min_interval = "0s"\n'), "blog", "min_interval", "positive"),
    ("max < min", src('min_interval = "2d"\nmax_interval = "1d"\n'), "blog", "max_interval", "2d"),
    ("bad delay", src('download_delay = "fast"\n'), "blog", "download_delay", "'fast'"),
    ("negative delay", src("download_delay = -1\n"), "blog", "download_delay", "-1"),
    (
        "concurrency 0",
        src("concurrency_per_host = 0\n"),
        "blog",
        "concurrency_per_host",
        "positive",
    ),
    ("missing_after 0", src("missing_after = 0\n"), "blog", "missing_after", "positive"),
    ("threshold 0", src("near_duplicate_threshold = 0\n"), "blog", THRESHOLD, "greater than 0"),
    ("threshold > 1", src("near_duplicate_threshold = 1.5\n"), "blog", THRESHOLD, "at most 1"),
    ("threshold str", src('near_duplicate_threshold = "hi"\n'), "blog", THRESHOLD, "number"),
    ("thin_words float", src("thin_words = 5.5\n"), "blog", "thin_words", "5.5"),
    ("bad render", src('render = "js"\n'), "blog", "render", "'playwright'"),
    ("empty wait_for", src('wait_for = ""\n'), "blog", "wait_for", "non-empty"),
    ("keep_params string", src('keep_params = "page"\n'), "blog", "keep_params", "list"),
    ("tracking int", src("tracking_params = [1]\n"), "blog", "tracking_params", "1"),
    ("missing id", '[[source]]\nstart_urls = ["http://a.org/"]\n', "#1", "id", "missing"),
    ("missing id, 2nd", src('[[source]]\nstart_urls = ["http://a.org/"]\n'), "#2", "id", "missing"),
    (
        "bad id",
        '[[source]]\nid = "my blog"\nstart_urls = ["http://a.org/"]\n',
        "#1",
        "id",
        "'my blog'",
    ),
    ("missing start_urls", '[[source]]\nid = "blog"\n', "blog", "start_urls", "missing"),
    ("duplicate id", src(src()), "blog", "id", "#1 and #2"),
    ("api string", src('api = "https://api.x.org/"\n'), "blog", "api", "table"),
    ("api no url", api("next = 'link'\n", url=""), "blog", "api.url", "missing"),
    ("api bad url", api("", url="url = 'api'\n"), "blog", "api.url", "http"),
    ("api unknown", api("item_path = 'x'\n"), "blog", "api.item_path", "'items_path'"),
    ("api bad next", api("next = 'page'\n"), "blog", "api.next", "'cursor'"),
    ("api cursor w/o field", api("next = 'cursor'\n"), "blog", "api.cursor_field", "needs"),
    ("api field w/o cursor", api("cursor_field = 'c'\n"), "blog", "api.cursor_field", "next"),
    ("api deleted empty", api("deleted_field = ''\n"), "blog", "api.deleted_field", "empty"),
    ("defaults bad value", defaults('depth_limit = "x"\n'), "[defaults]", DEPTH, "integer"),
    ("defaults with id", defaults('id = "x"\n'), "[defaults]", "id", "not allowed"),
    ("defaults unknown", defaults("render_mode = 'http'\n"), "[defaults]", "render_mode", "render"),
    ("defaults not table", "defaults = 3\n" + src(), None, "defaults", "table"),
]


@pytest.mark.parametrize(
    ("body", "source", "key", "fragment"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_error_names_file_source_and_key(
    tmp_path: Path, body: str, source: str | None, key: str | None, fragment: str
) -> None:
    path = write(tmp_path, body)
    with pytest.raises(SeedsError) as info:
        load_sources(path)
    err = info.value
    text = str(err)
    assert "\n" not in text
    assert err.file == str(path)
    assert text.startswith(str(path) + ": ")
    assert err.source == source
    assert err.key == key
    if source is not None:
        assert f"source {source!r}" in text
    if key is not None:
        assert f"key {key!r}" in text
    assert fragment in text


def test_documented_message_example(tmp_path: Path) -> None:
    path = write(tmp_path, "[[source]]\n" + MINIMAL + 'depth_limit = "ten"\n')
    with pytest.raises(SeedsError) as info:
        load_sources(path)
    assert str(info.value) == (
        f"{path}: source 'blog': key 'depth_limit': expected a non-negative integer, got 'ten'"
    )


def test_bad_toml_reports_line_number(tmp_path: Path) -> None:
    path = write(tmp_path, "[[source]]\n" + MINIMAL + "depth_limit = = 3\n")
    with pytest.raises(SeedsError, match=r"invalid TOML: .*line 4"):
        load_sources(path)


@pytest.mark.parametrize("kind", ["missing", "directory", "not utf-8"])
def test_unreadable_file(tmp_path: Path, kind: str) -> None:
    if kind == "missing":
        path = tmp_path / "nope.toml"
    elif kind == "directory":
        path = tmp_path / "dir.toml"
        path.mkdir()
    else:
        path = tmp_path / "latin1.toml"
        path.write_bytes(b'[[source]]\nid = "caf\xe9"\n')
    with pytest.raises(SeedsError) as info:
        load_sources(path)
    assert info.value.file == str(path)
    assert str(info.value).startswith(f"{path}: ")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_unreadable_permissions(tmp_path: Path) -> None:
    path = write(tmp_path, "[[source]]\n" + MINIMAL)
    path.chmod(0)
    try:
        try:
            open(path, "rb").close()
        except PermissionError:
            pass
        else:
            pytest.skip("running as root: permissions are not enforced")
        with pytest.raises(SeedsError, match="cannot read"):
            load_sources(path)
    finally:
        path.chmod(0o644)


def test_unknown_key_suggests_closest(tmp_path: Path) -> None:
    path = write(tmp_path, "[[source]]\n" + MINIMAL + "folow_links = false\n")
    with pytest.raises(SeedsError, match=r"did you mean 'follow_links'\?"):
        load_sources(path)


def test_error_in_later_source_names_it(tmp_path: Path) -> None:
    body = "[[source]]\n" + MINIMAL + '[[source]]\nid = "docs"\nstart_urls = ["x"]\n'
    with pytest.raises(SeedsError) as info:
        load_sources(write(tmp_path, body))
    assert (info.value.source, info.value.key) == ("docs", "start_urls")


# --------------------------------------------------------------------------- defaults


def test_defaults(tmp_path: Path) -> None:
    s = one_source(tmp_path)
    assert s == Source(
        id="blog",
        start_urls=("https://blog.example.com/",),
        allowed_domains=("blog.example.com",),
    )
    assert s.sitemaps == () and s.feeds == () and s.api is None
    assert s.follow_links is True
    assert (s.depth_limit, s.max_pages) == (5, 0)
    assert s.include == s.exclude == s.boilerplate == ()
    assert s.keep_params == frozenset()
    assert s.tracking_params == DEFAULT_TRACKING_PARAMS
    assert (s.render, s.wait_for) == ("http", "load")
    assert s.download_delay is None and s.concurrency_per_host is None
    assert s.min_interval == timedelta(hours=1)
    assert s.max_interval == timedelta(days=7)
    assert (s.missing_after, s.missing_window) == (2, timedelta(days=1))
    assert s.near_duplicate_threshold == 0.85
    assert s.thin_words == 50


def test_default_tracking_params_cover_the_usual() -> None:
    for name in ("utm_source", "utm_medium", "utm_campaign", "gclid", "fbclid", "msclkid"):
        assert name in DEFAULT_TRACKING_PARAMS


def test_allowed_domains_default_to_lowercased_hosts(tmp_path: Path) -> None:
    s = one_source(tmp_path, "")
    assert s.allowed_domains == ("blog.example.com",)
    [s] = load_sources(
        write(
            tmp_path,
            '[[source]]\nid = "x"\nstart_urls = ["https://WWW.Example.COM/a", '
            '"http://www.example.com:8080/b", "https://docs.example.com./"]\n',
        )
    )
    assert s.allowed_domains == ("www.example.com", "docs.example.com")


def test_every_key_parses(tmp_path: Path) -> None:
    body = (
        "[[source]]\n"
        + MINIMAL
        + (
            'allowed_domains = ["Example.com"]\n'
            'sitemaps = ["https://blog.example.com/sitemap.xml"]\n'
            'feeds = ["https://blog.example.com/feed"]\n'
            "follow_links = false\n"
            "depth_limit = 0\n"
            "max_pages = 10\n"
            "include = ['/posts/']\n"
            "exclude = ['\\?print=1']\n"
            'keep_params = ["page"]\n'
            'tracking_params = ["src"]\n'
            "boilerplate = ['Share this']\n"
            'render = "auto"\n'
            'wait_for = "#content"\n'
            'download_delay = "2s"\n'
            "concurrency_per_host = 4\n"
            'min_interval = "30m"\n'
            'max_interval = "2w"\n'
            "missing_after = 3\n"
            'missing_window = "0s"\n'
            "near_duplicate_threshold = 1\n"
            "thin_words = 0\n"
            "[source.api]\n"
            'url = "https://api.example.com/v1/posts"\n'
            'items_path = "data.posts"\n'
            'url_field = "link"\n'
            'next = "cursor"\n'
            'cursor_field = "meta.next"\n'
            'cursor_param = "after"\n'
            'deleted_field = "meta.deleted"\n'
        )
    )
    [s] = load_sources(write(tmp_path, body))
    assert s.allowed_domains == ("example.com",)
    assert s.sitemaps == ("https://blog.example.com/sitemap.xml",)
    assert s.feeds == ("https://blog.example.com/feed",)
    assert s.follow_links is False
    assert (s.depth_limit, s.max_pages) == (0, 10)
    assert [p.pattern for p in s.include] == ["/posts/"]
    assert [p.pattern for p in s.exclude] == [r"\?print=1"]
    assert s.keep_params == {"page"}
    assert s.tracking_params == DEFAULT_TRACKING_PARAMS | {"src"}
    assert [p.pattern for p in s.boilerplate] == ["Share this"]
    assert (s.render, s.wait_for) == ("auto", "#content")
    assert s.download_delay == 2.0
    assert s.concurrency_per_host == 4
    assert s.min_interval == timedelta(minutes=30)
    assert s.max_interval == timedelta(weeks=2)
    assert (s.missing_after, s.missing_window) == (3, timedelta(0))
    assert s.near_duplicate_threshold == 1.0 and isinstance(s.near_duplicate_threshold, float)
    assert s.thin_words == 0
    assert s.api == ApiConfig(
        url="https://api.example.com/v1/posts",
        items_path="data.posts",
        url_field="link",
        next="cursor",
        cursor_field="meta.next",
        cursor_param="after",
        deleted_field="meta.deleted",
    )


def test_api_defaults(tmp_path: Path) -> None:
    s = one_source(tmp_path, "[source.api]\nurl = 'https://api.example.com/'\n")
    assert s.api == ApiConfig(url="https://api.example.com/")
    assert (s.api.items_path, s.api.url_field, s.api.next) == ("items", "url", "link")
    assert (s.api.cursor_field, s.api.cursor_param) == (None, "cursor")
    assert s.api.deleted_field is None


@pytest.mark.parametrize(
    ("toml_value", "expected"),
    [("2", 2.0), ("0.5", 0.5), ('"250s"', 250.0), ('"1m"', 60.0), ("0", 0.0)],
)
def test_download_delay_number_or_duration(
    tmp_path: Path, toml_value: str, expected: float
) -> None:
    s = one_source(tmp_path, f"download_delay = {toml_value}\n")
    assert s.download_delay == expected
    assert isinstance(s.download_delay, float)


def test_duplicate_urls_are_kept_once(tmp_path: Path) -> None:
    [src] = load_sources(
        write(tmp_path, '[[source]]\nid = "x"\nstart_urls = ["http://a.org/", "http://a.org/"]\n')
    )
    assert src.start_urls == ("http://a.org/",)


def test_defaults_table_applies_and_is_overridden(tmp_path: Path) -> None:
    body = (
        '[defaults]\ndepth_limit = 2\nrender = "playwright"\nexclude = ["/tag/"]\n'
        "[[source]]\n" + MINIMAL + '[[source]]\nid = "docs"\nstart_urls = ["https://d.org/"]\n'
        "depth_limit = 7\n"
    )
    blog, docs = load_sources(write(tmp_path, body))
    assert (blog.depth_limit, blog.render) == (2, "playwright")
    assert (docs.depth_limit, docs.render) == (7, "playwright")
    assert [p.pattern for p in docs.exclude] == ["/tag/"]


def test_interval_check_sees_defaults(tmp_path: Path) -> None:
    body = '[defaults]\nmin_interval = "8d"\n[[source]]\n' + MINIMAL
    with pytest.raises(SeedsError) as info:
        load_sources(write(tmp_path, body))
    assert (info.value.source, info.value.key) == ("blog", "min_interval")


def test_only(tmp_path: Path) -> None:
    body = "[[source]]\n" + MINIMAL + '[[source]]\nid = "docs"\nstart_urls = ["https://d.org/"]\n'
    path = write(tmp_path, body)
    assert [s.id for s in load_sources(path)] == ["blog", "docs"]
    assert [s.id for s in load_sources(path, only="docs")] == ["docs"]
    with pytest.raises(SeedsError) as info:
        load_sources(path, only="wiki")
    assert info.value.source == "wiki"
    assert "'blog', 'docs'" in str(info.value)


def test_source_is_frozen_and_hashable(tmp_path: Path) -> None:
    s = one_source(tmp_path)
    with pytest.raises(AttributeError):
        s.depth_limit = 3  # type: ignore[misc]
    assert hash(s) == hash(one_source(tmp_path))


def test_shipped_seed_files_are_valid() -> None:
    [demo] = load_sources(REPO / "seeds" / "demo.toml")
    assert demo.start_urls == ("http://localhost:8089/",)
    assert demo.allowed_domains == ("localhost",)
    example = load_sources(REPO / "seeds" / "example.toml")
    assert len(example) == 2


def test_example_file_shows_every_key() -> None:
    text = (REPO / "seeds" / "example.toml").read_text(encoding="utf-8")
    for key in KNOWN_KEYS:
        line = r"^\[source\.api\]$" if key == "api" else rf"^{key} = "
        assert re.search(line, text, re.MULTILINE), key
    for key in ("items_path", "url_field", "next", "cursor_field", "cursor_param"):
        assert re.search(rf"^{key} = ", text, re.MULTILINE), key


# --------------------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("15m", timedelta(minutes=15)),
        ("6h", timedelta(hours=6)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
        ("1h30m", timedelta(minutes=90)),
        ("1d 12h", timedelta(hours=36)),
        (" 2 hours ", timedelta(hours=2)),
        ("10min", timedelta(minutes=10)),
        ("1.5h", timedelta(minutes=90)),
        ("0s", timedelta(0)),
        ("45", timedelta(seconds=45)),
        ("2.5", timedelta(seconds=2.5)),
        (90, timedelta(seconds=90)),
        (0.25, timedelta(seconds=0.25)),
        ("6H", timedelta(hours=6)),
    ],
)
def test_parse_duration(text: str | int | float, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "bad",
    ["", "  ", "soon", "h", "5x", "-5s", "-5", "5 s s", "1ms", "1h-30m", "1e3s", True, -1,
     float("inf"), float("nan"), "99999999999w", None, [1]],
)  # fmt: skip
def test_parse_duration_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)  # type: ignore[arg-type]


@given(
    d=st.integers(0, 400),
    h=st.integers(0, 100),
    m=st.integers(0, 1000),
    s=st.integers(0, 100_000),
    sep=st.sampled_from(["", " ", "  "]),
)
def test_parse_duration_property(d: int, h: int, m: int, s: int, sep: str) -> None:
    text = sep.join([f"{d}d", f"{h}h", f"{m}m", f"{s}s"])
    assert parse_duration(text) == timedelta(days=d, hours=h, minutes=m, seconds=s)


@given(parts=st.lists(st.tuples(st.integers(0, 999), st.sampled_from("wdhms")), min_size=1))
def test_parse_duration_any_subset(parts: list[tuple[int, str]]) -> None:
    size = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
    text = "".join(f"{n}{u}" for n, u in parts)
    assert parse_duration(text) == timedelta(seconds=sum(n * size[u] for n, u in parts))


# --------------------------------------------------------------------------- scope


def scoped(**kw: object) -> Source:
    values: dict[str, object] = {
        "id": "x",
        "start_urls": ("https://example.com/",),
        "allowed_domains": ("example.com",),
    }
    values.update(kw)
    return Source(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.com/", True),
        ("http://example.com/a?b=1", True),
        ("https://EXAMPLE.com./a", True),
        ("https://www.example.com/a", True),
        ("https://docs.example.com/a", True),
        ("https://example.com:8443/a", True),
        ("https://badexample.com/", False),
        ("https://example.com.evil.org/", False),
        ("https://example.org/", False),
        ("ftp://example.com/", False),
        ("mailto:a@example.com", False),
        ("/relative/path", False),
        ("javascript:void(0)", False),
        ("http://[::1/", False),
        ("https://example.com@evil.org/", False),
        ("https://evil.org/?next=https://example.com/", False),
        ("", False),
    ],
)
def test_in_scope_domains(url: str, expected: bool) -> None:
    assert scoped().in_scope(url) is expected


def test_in_scope_www_allowed_domain_covers_bare_host() -> None:
    s = scoped(allowed_domains=("www.example.com",))
    assert s.in_scope("https://example.com/a")
    assert s.in_scope("https://www.example.com/a")
    assert not s.in_scope("https://blog.example.com/a")


def test_in_scope_include_exclude() -> None:
    s = scoped(
        include=(re.compile(r"/docs/"), re.compile(r"/blog/")),
        exclude=(re.compile(r"\?print"), re.compile(r"/docs/old/")),
    )
    assert s.in_scope("https://example.com/docs/a")
    assert s.in_scope("https://example.com/blog/b")
    assert not s.in_scope("https://example.com/about")
    assert not s.in_scope("https://example.com/docs/a?print=1")
    assert not s.in_scope("https://example.com/docs/old/x")
    assert not s.in_scope("https://other.org/docs/a")  # patterns never widen the domains


def test_in_scope_patterns_search_the_full_url() -> None:
    s = scoped(include=(re.compile(r"^https://example\.com/"),))
    assert s.in_scope("https://example.com/a")
    assert not s.in_scope("http://example.com/a")
    assert not scoped(exclude=(re.compile("example"),)).in_scope("https://example.com/")


def test_in_scope_from_file(tmp_path: Path) -> None:
    s = one_source(tmp_path, "include = ['/posts/']\n")
    assert s.in_scope("https://blog.example.com/posts/1")
    assert not s.in_scope("https://blog.example.com/about")
    assert not s.in_scope("https://example.com/posts/1")  # parent of the start host


# --------------------------------------------------------------------------- URL lists


def test_sources_from_urls_groups_by_host() -> None:
    sources = sources_from_urls(
        "http://a.test/, http://a.test/x,https://B.test/,http://b.test/y,http://c.test:8080/"
    )
    assert [s.id for s in sources] == ["a.test", "b.test", "c.test_8080"]
    a, b, c = sources
    assert a.start_urls == ("http://a.test/", "http://a.test/x")
    assert b.start_urls == ("https://B.test/", "http://b.test/y")
    assert b.allowed_domains == ("b.test",)
    assert c.allowed_domains == ("c.test",)
    assert a == Source(id="a.test", start_urls=a.start_urls, allowed_domains=("a.test",))


def test_sources_from_urls_loopback_ip_and_ipv6() -> None:
    [s, v6] = sources_from_urls("http://127.0.0.1:8089/,http://[::1]:81/")
    assert s.id == "127.0.0.1_8089"
    assert s.allowed_domains == ("127.0.0.1",)
    assert s.in_scope("http://127.0.0.1:8089/page")
    assert v6.id == "__1_81"
    assert v6.in_scope("http://[::1]:81/x")


def test_sources_from_urls_overrides() -> None:
    [s] = sources_from_urls("http://a.test/", depth_limit=1, max_pages=3, render="auto")
    assert (s.depth_limit, s.max_pages, s.render) == (1, 3, "auto")
    with pytest.raises(SeedsError) as info:
        sources_from_urls("http://a.test/", depth_limt=1)
    assert info.value.key == "depth_limt"
    assert "depth_limit" in str(info.value)
    with pytest.raises(SeedsError) as info:
        sources_from_urls("http://a.test/", depth_limit="1")
    assert info.value.key == "depth_limit"
    with pytest.raises(SeedsError, match="from the URLs") as info:
        sources_from_urls("http://a.test/", start_urls=["http://b.test/"])
    assert info.value.key == "start_urls"


@pytest.mark.parametrize("bad", ["", " , ", "ftp://a.test/", "http://a.test/,notaurl", "http://"])
def test_sources_from_urls_rejects(bad: str) -> None:
    with pytest.raises(SeedsError) as info:
        sources_from_urls(bad)
    assert info.value.key == "seeds"
    assert "\n" not in str(info.value)


def test_resolve_seeds_urls() -> None:
    [s] = resolve_seeds("https://a.test/seeds.toml")  # a URL, even when it ends in .toml
    assert s.start_urls == ("https://a.test/seeds.toml",)
    sources = resolve_seeds("https://a.test/,https://b.test/x")
    assert [s.id for s in sources] == ["a.test", "b.test"]
    assert [s.id for s in resolve_seeds("https://a.test/,https://b.test/x", only="b.test")] == [
        "b.test"
    ]
    with pytest.raises(SeedsError, match=r"'a\.test'"):
        resolve_seeds("https://a.test/", only="zzz")


def test_resolve_seeds_files(tmp_path: Path) -> None:
    path = write(tmp_path, "[[source]]\n" + MINIMAL)
    assert [s.id for s in resolve_seeds(str(path))] == ["blog"]
    assert [s.id for s in resolve_seeds(str(path), only="blog")] == ["blog"]
    other = write(tmp_path, "[[source]]\n" + MINIMAL, name="seeds.conf")
    assert [s.id for s in resolve_seeds(str(other))] == ["blog"]
    with pytest.raises(SeedsError, match="file not found") as info:
        resolve_seeds(str(tmp_path / "missing.toml"))
    assert info.value.file == str(tmp_path / "missing.toml")


@pytest.mark.parametrize("bad", ["", "   ", "seeds/demo", "example.com", "ftp://x.org/"])
def test_resolve_seeds_rejects(bad: str) -> None:
    with pytest.raises(SeedsError) as info:
        resolve_seeds(bad)
    assert info.value.key == "seeds"


# --------------------------------------------------------------------------- validate command


def test_validate_ok(tmp_path: Path) -> None:
    body = (
        "[[source]]\n" + MINIMAL + "max_pages = 100\n"
        '[[source]]\nid = "docs"\nstart_urls = ["https://d.org/", "https://d.org/b"]\n'
        'render = "playwright"\n'
    )
    result = CliRunner().invoke(validate, [str(write(tmp_path, body))])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("blog: 1 start URL,")
    assert "blog.example.com" in lines[0] and "render http" in lines[0]
    assert "depth 5" in lines[0] and "max_pages 100" in lines[0]
    assert lines[1].startswith("docs: 2 start URLs,")
    assert "render playwright" in lines[1] and "max_pages unlimited" in lines[1]
    assert result.stderr == ""


def test_validate_json(tmp_path: Path) -> None:
    path = write(tmp_path, "[[source]]\n" + MINIMAL + "include = ['/p/']\n")
    result = CliRunner().invoke(validate, [str(path), "--json"])
    assert result.exit_code == 0
    [data] = json.loads(result.stdout)
    assert data["id"] == "blog"
    assert data["include"] == ["/p/"]
    assert data["min_interval_seconds"] == 3600
    assert data["api"] is None


def test_validate_source_option(tmp_path: Path) -> None:
    body = "[[source]]\n" + MINIMAL + '[[source]]\nid = "docs"\nstart_urls = ["https://d.org/"]\n'
    path = write(tmp_path, body)
    result = CliRunner().invoke(validate, [str(path), "--source", "docs"])
    assert result.exit_code == 0
    assert result.stdout.startswith("docs: ")
    result = CliRunner().invoke(validate, [str(path), "--source", "nope"])
    assert result.exit_code == 2


@pytest.mark.parametrize(
    "body",
    [case[1] for case in ERROR_CASES[::7]] + [None],
    ids=[case[0] for case in ERROR_CASES[::7]] + ["missing file"],
)
def test_validate_bad_file(tmp_path: Path, body: str | None) -> None:
    path = tmp_path / "bad.toml" if body is None else write(tmp_path, body)
    result = CliRunner().invoke(validate, [str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"knowledge-crawler: error: {path}: ")


def test_validate_message_is_the_seeds_error(tmp_path: Path) -> None:
    path = write(tmp_path, "[[source]]\n" + MINIMAL + 'depth_limit = "ten"\n')
    result = CliRunner().invoke(validate, [str(path)])
    assert result.stderr == (
        f"knowledge-crawler: error: {path}: source 'blog': key 'depth_limit': "
        "expected a non-negative integer, got 'ten'\n"
    )


def test_validate_shipped_files() -> None:
    for name in ("demo.toml", "example.toml"):
        result = CliRunner().invoke(validate, [str(REPO / "seeds" / name)])
        assert result.exit_code == 0, result.output


def test_validate_help() -> None:
    result = CliRunner().invoke(validate, ["--help"])
    assert result.exit_code == 0
    assert "[[source]]" in result.stdout
    assert "--json" in result.stdout


def test_bad_input_is_one_line() -> None:
    runner = CliRunner()
    import click

    @click.command()
    def boom() -> None:
        raise BadInput("first\nsecond")

    result = runner.invoke(boom, [])
    assert result.exit_code == 2
    assert result.stderr == "knowledge-crawler: error: first second\n"


def test_validate_does_not_import_scrapy() -> None:
    import subprocess

    code = (
        "import sys; import knowledge_crawler.cli.validate, knowledge_crawler.sources; "
        "print(any(m == 'scrapy' or m.startswith(('scrapy.', 'twisted')) for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- parameter names


def test_tracking_params_match_any_case(tmp_path: Path) -> None:
    from knowledge_crawler.transform.canonical import canonical_url, fetch_url

    s = one_source(tmp_path, 'tracking_params = ["SessionID"]\n')
    assert "sessionid" in s.tracking_params
    for name in ("sessionid", "SessionID", "SESSIONID"):
        url = f"https://blog.example.com/a?{name}=1&id=2"
        assert canonical_url(url, tracking_params=s.tracking_params) == (
            "https://blog.example.com/a?id=2"
        )
        assert fetch_url(url, tracking_params=s.tracking_params) == (
            "https://blog.example.com/a?id=2"
        )


def test_keep_params_match_any_case(tmp_path: Path) -> None:
    from knowledge_crawler.transform.canonical import canonical_url

    s = one_source(tmp_path, 'keep_params = ["Page"]\n')
    url = "https://blog.example.com/list?page=2&sort=new"
    assert canonical_url(url, keep_params=s.keep_params) == "https://blog.example.com/list?page=2"


def test_parameter_names_are_kept_once_whatever_their_case(tmp_path: Path) -> None:
    s = one_source(tmp_path, 'tracking_params = ["SID", "sid"]\nkeep_params = ["Q", "q"]\n')
    assert s.tracking_params == DEFAULT_TRACKING_PARAMS | {"sid"}
    assert s.keep_params == {"q"}


# --------------------------------------------------------------------------- boilerplate


def test_boilerplate_anchors_match_lines(tmp_path: Path) -> None:
    from knowledge_crawler.transform.clean import clean_text

    s = one_source(tmp_path, "boilerplate = ['^Share this$', '^Related:.*$']\n")
    text = "Lamps\nShare this\nThe Aura lamp is bright.\nRelated: desks, chairs\nEnd."
    assert all(p.flags & re.MULTILINE for p in s.boilerplate)
    assert clean_text(text, s.boilerplate) == "Lamps\n\nThe Aura lamp is bright.\n\nEnd."
    # A line that merely contains the phrase is not boilerplate.
    assert "Please Share this page" in clean_text("Please Share this page", s.boilerplate)


def test_boilerplate_given_compiled_is_multiline_too() -> None:
    [s] = sources_from_urls("https://a.test/", boilerplate=[re.compile("^Ads$", re.IGNORECASE)])
    [pattern] = s.boilerplate
    assert pattern.flags & re.MULTILINE and pattern.flags & re.IGNORECASE
    assert pattern.search("Text\nADS\nMore")


def test_include_and_exclude_keep_their_flags(tmp_path: Path) -> None:
    # Only boilerplate is matched against text lines; URL patterns stay as written.
    s = one_source(tmp_path, "include = ['^https://']\n")
    assert not s.include[0].flags & re.MULTILINE
