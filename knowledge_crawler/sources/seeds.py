"""Reading and validating sources: ``seeds/*.toml`` files and ``seeds=`` arguments ->
:class:`~knowledge_crawler.sources.scope.Source` records.

Pure module: standard library only, no Scrapy, no database, no network.

A source file holds one or more ``[[source]]`` tables and an optional top-level
``[defaults]`` table whose keys apply to every source (a source's own value wins)::

    [defaults]
    depth_limit = 3

    [[source]]
    id = "docs"
    start_urls = ["https://docs.example.com/"]
    include = ['^https://docs\\.example\\.com/guide/']

Every problem raises :class:`~knowledge_crawler.errors.SeedsError`, whose ``str()``
is one line naming the file, the source (its id, or ``#N`` when the id is missing)
and the key, e.g. ``seeds/demo.toml: source 'blog': key 'depth_limit': expected a
non-negative integer, got 'ten'``. Nothing is coerced silently, except that an
integer is accepted where a float is expected.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields
from datetime import timedelta
from typing import Any, cast
from urllib.parse import urlsplit

from knowledge_crawler.errors import SeedsError
from knowledge_crawler.sources.scope import RENDER_MODES, ApiConfig, Source, host_allowed, host_of
from knowledge_crawler.transform.canonical import DEFAULT_TRACKING_PARAMS

__all__ = [
    "KNOWN_KEYS",
    "load_sources",
    "parse_duration",
    "resolve_seeds",
    "sources_from_urls",
]

_API_NEXT_MODES: tuple[str, ...] = ("link", "cursor")
_ID_RE = re.compile(r"[A-Za-z0-9_.-]+")
_HOST_RE = re.compile(
    r"(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*"
)
_IPV6_RE = re.compile(r"[0-9a-f:.]*:[0-9a-f:.]*")


# --------------------------------------------------------------------------- durations

_UNIT_SECONDS: dict[str, int] = {
    "w": 604800,
    "week": 604800,
    "weeks": 604800,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
}
_UNITS_ALT = "|".join(sorted(_UNIT_SECONDS, key=len, reverse=True))
_NUMBER = r"\d+(?:\.\d+)?|\.\d+"
_DURATION_PART = re.compile(rf"\s*({_NUMBER})\s*({_UNITS_ALT})(?![a-z])\s*")
_BARE_NUMBER = re.compile(rf"\s*({_NUMBER})\s*")


def parse_duration(value: str | int | float) -> timedelta:
    """Parse a duration: ``"30s"``, ``"15m"``, ``"6h"``, ``"7d"``, ``"2w"``, ``"1h30m"``.

    Parts may be separated by spaces (``"1d 12h"``) and units may be spelled out
    (``"2 hours"``). A bare number (int, float or numeric string) is seconds.
    Negative, non-finite or malformed values raise :class:`ValueError`.

    >>> parse_duration("1h30m")
    datetime.timedelta(seconds=5400)
    >>> parse_duration(90)
    datetime.timedelta(seconds=90)
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected a duration such as '30s', '6h' or '7d', got {value!r}")
    try:
        if isinstance(value, int | float):
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"expected a non-negative duration, got {value!r}")
            return timedelta(seconds=value)
        text = value.strip().lower()
        bare = _BARE_NUMBER.fullmatch(text)
        if bare:
            return timedelta(seconds=float(bare.group(1)))
        total = 0.0
        pos = 0
        while pos < len(text):
            m = _DURATION_PART.match(text, pos)
            if m is None or m.end() == pos:
                raise ValueError(
                    f"expected a duration such as '30s', '15m', '6h', '7d' or '1h30m', "
                    f"got {value!r}"
                )
            total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
            pos = m.end()
        if not text:
            raise ValueError("expected a duration such as '30s', '6h' or '7d', got ''")
        return timedelta(seconds=total)
    except OverflowError:
        raise ValueError(f"duration {value!r} is too large") from None


# --------------------------------------------------------------------------- key parsers


class _Bad(Exception):
    """A value failed validation; the caller adds file, source and key."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.key = key


def _show(value: object) -> str:
    """A short, readable rendering of a bad value for messages."""
    if isinstance(value, str):
        text = repr(value)
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, dict):
        text = "a table"
    elif isinstance(value, list | tuple):
        text = f"a list {value!r}" if len(repr(value)) <= 60 else "a list"
    else:
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_at_least(minimum: int, what: str) -> Callable[[object], int]:
    def parse(value: object) -> int:
        if not _is_int(value) or cast(int, value) < minimum:
            raise _Bad(f"expected {what}, got {_show(value)}")
        return cast(int, value)

    return parse


def _parse_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"expected true or false, got {_show(value)}")
    return value


def _parse_nonempty_str(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Bad(f"expected a non-empty string, got {_show(value)}")
    return value.strip()


def _check_url(value: object) -> str:
    if not isinstance(value, str):
        raise _Bad(f"expected an absolute http(s) URL string, got {_show(value)}")
    url = value.strip()
    if not url or any(c.isspace() for c in url):
        raise _Bad(f"expected an absolute http(s) URL without spaces, got {_show(value)}")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise _Bad(f"invalid URL {value!r}: {exc}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise _Bad(f"expected an absolute http or https URL, got {value!r}")
    if not host:
        raise _Bad(f"URL {value!r} has no host")
    return url


def _parse_url_list(value: object, *, allow_empty: bool = True) -> tuple[str, ...]:
    if isinstance(value, str):
        raise _Bad(f'expected a list of URLs (write ["..."]), got the string {value!r}')
    if not isinstance(value, list | tuple):
        raise _Bad(f"expected a list of URLs, got {_show(value)}")
    if not value and not allow_empty:
        raise _Bad("expected at least one URL, got an empty list")
    urls = [_check_url(v) for v in value]
    return tuple(dict.fromkeys(urls))


def _parse_start_urls(value: object) -> tuple[str, ...]:
    return _parse_url_list(value, allow_empty=False)


def _parse_domains(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        raise _Bad(f'expected a list of host names (write ["..."]), got the string {value!r}')
    if not isinstance(value, list | tuple):
        raise _Bad(f"expected a list of host names, got {_show(value)}")
    if not value:
        raise _Bad("expected at least one host name, got an empty list")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise _Bad(f"expected a host name string, got {_show(item)}")
        host = item.strip().lower().rstrip(".")
        if "://" in host or "/" in host:
            raise _Bad(f"expected a bare host name such as 'example.com', got {item!r}")
        if not (_HOST_RE.fullmatch(host) or _IPV6_RE.fullmatch(host)):
            raise _Bad(f"invalid host name {item!r}")
        out.append(host)
    return tuple(dict.fromkeys(out))


def _parse_names(value: object) -> frozenset[str]:
    """Query parameter names, lower-cased: they are matched case-insensitively
    (see :mod:`knowledge_crawler.transform.canonical`), so ``SessionID`` and
    ``sessionid`` are one name."""
    if isinstance(value, str):
        raise _Bad(f'expected a list of parameter names (write ["..."]), got {value!r}')
    if not isinstance(value, list | tuple | set | frozenset):
        raise _Bad(f"expected a list of parameter names, got {_show(value)}")
    out: set[str] = set()
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise _Bad(f"expected a non-empty parameter name, got {_show(item)}")
        out.add(item.strip().lower())
    return frozenset(out)


def _parse_tracking(value: object) -> frozenset[str]:
    """The built-in tracking names plus the source's own (both lower-case)."""
    return DEFAULT_TRACKING_PARAMS | _parse_names(value)


def _parse_patterns(value: object) -> tuple[re.Pattern[str], ...]:
    if isinstance(value, str):
        raise _Bad(f"expected a list of regular expressions (write ['...']), got {value!r}")
    if not isinstance(value, list | tuple):
        raise _Bad(f"expected a list of regular expressions, got {_show(value)}")
    out: list[re.Pattern[str]] = []
    for item in value:
        if isinstance(item, re.Pattern):
            out.append(cast("re.Pattern[str]", item))
            continue
        if not isinstance(item, str):
            raise _Bad(f"expected a regular expression string, got {_show(item)}")
        try:
            out.append(re.compile(item))
        except re.error as exc:
            raise _Bad(f"bad regular expression {item!r}: {exc}") from None
    return tuple(out)


def _parse_boilerplate(value: object) -> tuple[re.Pattern[str], ...]:
    """Boilerplate regexes run over the page's text, so ``^``/``$`` match at each line
    (``re.MULTILINE``): ``'^Share this$'`` removes that line, not only a whole page
    saying just that. A pattern given compiled keeps its flags and gains MULTILINE."""
    return tuple(re.compile(p.pattern, p.flags | re.MULTILINE) for p in _parse_patterns(value))


def _parse_render(value: object) -> str:
    for mode in RENDER_MODES:
        if value == mode:
            return mode
    raise _Bad(f"expected one of 'http', 'playwright', 'auto', got {_show(value)}")


def _parse_delay(value: object) -> float:
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, str):
        try:
            seconds = parse_duration(value).total_seconds()
        except ValueError:
            raise _Bad(
                f"expected seconds (a number) or a duration such as '2s', got {_show(value)}"
            ) from None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise _Bad(f"expected seconds (a number) or a duration such as '2s', got {_show(value)}")
    if not math.isfinite(seconds) or seconds < 0:
        raise _Bad(f"expected a non-negative delay, got {_show(value)}")
    return seconds


def _duration(positive: bool) -> Callable[[object], timedelta]:
    def parse(value: object) -> timedelta:
        if isinstance(value, timedelta):
            result = value
        elif isinstance(value, str | int | float) and not isinstance(value, bool):
            try:
                result = parse_duration(value)
            except ValueError as exc:
                raise _Bad(str(exc)) from None
        else:
            raise _Bad(f"expected a duration such as '30s', '6h' or '7d', got {_show(value)}")
        if result < timedelta(0) or (positive and result == timedelta(0)):
            need = "a positive" if positive else "a non-negative"
            raise _Bad(f"expected {need} duration, got {_show(value)}")
        return result

    return parse


def _parse_threshold(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"expected a number in (0, 1], got {_show(value)}")
    if not (0 < value <= 1):
        raise _Bad(f"expected a number greater than 0 and at most 1, got {value!r}")
    return float(value)


_API_KEYS = (
    "url",
    "items_path",
    "url_field",
    "next",
    "cursor_field",
    "cursor_param",
    "deleted_field",
)


def _parse_api(value: object) -> ApiConfig:
    if isinstance(value, ApiConfig):
        return value
    if not isinstance(value, dict):
        raise _Bad(f'expected a table such as {{ url = "https://..." }}, got {_show(value)}')
    table = cast("dict[str, object]", value)
    for key in table:
        if key not in _API_KEYS:
            raise _Bad(_unknown_key_message(key, _API_KEYS), key=f"api.{key}")
    if "url" not in table:
        raise _Bad("missing required key 'url'", key="api.url")
    kwargs: dict[str, Any] = {}
    for key, raw in table.items():
        try:
            if key == "url":
                kwargs[key] = _check_url(raw)
            elif key == "next":
                if raw not in _API_NEXT_MODES:
                    raise _Bad(f"expected 'link' or 'cursor', got {_show(raw)}")
                kwargs[key] = raw
            else:
                kwargs[key] = _parse_nonempty_str(raw)
        except _Bad as bad:
            raise _Bad(bad.message, key=f"api.{key}") from None
    api = ApiConfig(**kwargs)
    if api.next == "cursor" and api.cursor_field is None:
        raise _Bad("next = 'cursor' needs a cursor_field", key="api.cursor_field")
    if api.next == "link" and api.cursor_field is not None:
        raise _Bad(
            "cursor_field is only used with next = 'cursor' (set next = \"cursor\")",
            key="api.cursor_field",
        )
    return api


def _parse_id(value: object) -> str:
    if not isinstance(value, str) or not _ID_RE.fullmatch(value):
        raise _Bad(f"expected letters, digits, '_', '.' or '-', got {_show(value)}")
    return value


_PARSERS: dict[str, Callable[[object], object]] = {
    "id": _parse_id,
    "start_urls": _parse_start_urls,
    "allowed_domains": _parse_domains,
    "sitemaps": _parse_url_list,
    "feeds": _parse_url_list,
    "api": _parse_api,
    "follow_links": _parse_bool,
    "depth_limit": _int_at_least(0, "a non-negative integer"),
    "max_pages": _int_at_least(0, "a non-negative integer (0 = unlimited)"),
    "include": _parse_patterns,
    "exclude": _parse_patterns,
    "keep_params": _parse_names,
    "tracking_params": _parse_tracking,
    "boilerplate": _parse_boilerplate,
    "render": _parse_render,
    "wait_for": _parse_nonempty_str,
    "download_delay": _parse_delay,
    "concurrency_per_host": _int_at_least(1, "a positive integer"),
    "min_interval": _duration(positive=True),
    "max_interval": _duration(positive=True),
    "missing_after": _int_at_least(1, "a positive integer"),
    "missing_window": _duration(positive=False),
    "near_duplicate_threshold": _parse_threshold,
    "thin_words": _int_at_least(0, "a non-negative integer"),
}

#: Source defaults, as :class:`Source` declares them (their one home).
_FIELD_DEFAULTS: dict[str, object] = {f.name: f.default for f in fields(Source)}

#: Every key a ``[[source]]`` table may hold, in the order of :class:`Source`'s fields.
KNOWN_KEYS: tuple[str, ...] = tuple(f.name for f in fields(Source))
assert set(KNOWN_KEYS) == set(_PARSERS), "every Source field needs a parser"

_NOT_IN_DEFAULTS = ("id", "start_urls")
_TOP_LEVEL_KEYS = ("source", "defaults")


def _unknown_key_message(key: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown key{hint}"


def _parse_table(
    table: Mapping[str, object],
    *,
    file: str | None,
    source: str | None,
    exclude: Iterable[str],
    why: str = "",
) -> dict[str, object]:
    """Validate each key of a source (or defaults) table into a dict of field values.

    Keys in ``exclude`` are refused with the message ``why``.
    """
    excluded = set(exclude)
    out: dict[str, object] = {}
    for key, raw in table.items():
        if key not in _PARSERS:
            raise SeedsError(
                _unknown_key_message(key, KNOWN_KEYS), file=file, source=source, key=key
            )
        if key in excluded:
            raise SeedsError(why or "not allowed here", file=file, source=source, key=key)
        try:
            out[key] = _PARSERS[key](raw)
        except _Bad as bad:
            raise SeedsError(bad.message, file=file, source=source, key=bad.key or key) from None
    return out


def _build(values: dict[str, object], *, file: str | None, label: str) -> Source:
    """Cross-field checks and defaults, then the frozen record."""
    for required in ("id", "start_urls"):
        if required not in values:
            raise SeedsError("missing required key", file=file, source=label, key=required)
    start_urls = cast("tuple[str, ...]", values["start_urls"])
    if "allowed_domains" in values:
        domains = cast("tuple[str, ...]", values["allowed_domains"])
        for url in start_urls:
            host = host_of(url)
            if host is None or not host_allowed(host, domains):
                raise SeedsError(
                    f"start URL {url!r} is outside allowed_domains {list(domains)}",
                    file=file,
                    source=label,
                    key="allowed_domains",
                )
    else:
        hosts = (host_of(url) for url in start_urls)
        values["allowed_domains"] = tuple(dict.fromkeys(h for h in hosts if h))
    min_interval = cast(timedelta, values.get("min_interval", _FIELD_DEFAULTS["min_interval"]))
    max_interval = cast(timedelta, values.get("max_interval", _FIELD_DEFAULTS["max_interval"]))
    if max_interval < min_interval:
        key = "max_interval" if "max_interval" in values else "min_interval"
        raise SeedsError(
            f"max_interval ({_fmt_td(max_interval)}) is shorter than "
            f"min_interval ({_fmt_td(min_interval)})",
            file=file,
            source=label,
            key=key,
        )
    return Source(**cast("dict[str, Any]", values))


def _fmt_td(td: timedelta) -> str:
    seconds = td.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


# --------------------------------------------------------------------------- loading


def _read_toml(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise SeedsError("file not found", file=path) from None
    except IsADirectoryError:
        raise SeedsError("is a directory, expected a .toml file", file=path) from None
    except OSError as exc:
        raise SeedsError(f"cannot read file: {exc.strerror or exc}", file=path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SeedsError(f"not UTF-8 text: {exc.reason} at byte {exc.start}", file=path) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SeedsError(f"invalid TOML: {exc}", file=path) from None


def load_sources(path: str | os.PathLike[str], *, only: str | None = None) -> list[Source]:
    """Load and validate every source of a TOML file (all of them, even with ``only``).

    ``only`` names one source id: just that source is returned, and a
    :class:`SeedsError` naming the ids present is raised when it is missing.
    """
    file = os.fspath(path)
    doc = _read_toml(file)
    for key in doc:
        if key not in _TOP_LEVEL_KEYS:
            msg = _unknown_key_message(key, _TOP_LEVEL_KEYS)
            if key in _PARSERS:
                msg = "source keys belong in a [[source]] table (or in [defaults])"
            raise SeedsError(msg, file=file, key=key)

    raw_defaults = doc.get("defaults", {})
    if not isinstance(raw_defaults, dict):
        raise SeedsError("expected a [defaults] table", file=file, key="defaults")
    defaults = _parse_table(
        raw_defaults,
        file=file,
        source="[defaults]",
        exclude=_NOT_IN_DEFAULTS,
        why="not allowed in [defaults]: every source sets its own",
    )

    tables = doc.get("source")
    if tables is None:
        raise SeedsError("no [[source]] table: the file defines no sources", file=file)
    if isinstance(tables, dict):
        raise SeedsError(
            "write [[source]] (double brackets: one per source), not [source]",
            file=file,
            key="source",
        )
    if not isinstance(tables, list) or not tables:
        raise SeedsError("expected one or more [[source]] tables", file=file, key="source")

    sources: list[Source] = []
    seen: dict[str, int] = {}
    for index, table in enumerate(tables, start=1):
        label = f"#{index}"
        if not isinstance(table, dict):
            raise SeedsError("expected a table", file=file, source=label, key="source")
        raw_id = table.get("id")
        if isinstance(raw_id, str) and _ID_RE.fullmatch(raw_id):
            label = raw_id
        values = _parse_table(table, file=file, source=label, exclude=())
        merged = {**defaults, **values}
        source = _build(merged, file=file, label=label)
        if source.id in seen:
            raise SeedsError(
                f"duplicate id: sources #{seen[source.id]} and #{index} are both {source.id!r}",
                file=file,
                source=source.id,
                key="id",
            )
        seen[source.id] = index
        sources.append(source)

    if only is None:
        return sources
    for source in sources:
        if source.id == only:
            return [source]
    present = ", ".join(repr(s.id) for s in sources)
    raise SeedsError(f"no such source; this file has {present}", file=file, source=only)


def sources_from_urls(urls: str, **overrides: object) -> list[Source]:
    """Comma-separated URLs -> one :class:`Source` per distinct host (and port).

    The id is the host, plus ``_PORT`` when the URL has an explicit port; every
    setting is the default unless given in ``overrides`` (keyed and validated
    like a ``[[source]]`` table, e.g. ``depth_limit=2``).

    >>> [s.id for s in sources_from_urls("http://a.test/,http://a.test/x,http://b.test:81/")]
    ['a.test', 'b.test_81']
    """
    items = [u.strip() for u in urls.split(",") if u.strip()]
    if not items:
        raise SeedsError("expected one or more comma-separated http(s) URLs", key="seeds")
    extra = _parse_table(
        overrides,
        file=None,
        source=None,
        exclude=_NOT_IN_DEFAULTS,
        why="cannot be overridden: it comes from the URLs",
    )
    groups: dict[str, list[str]] = {}
    for raw in items:
        try:
            url = _check_url(raw)
        except _Bad as bad:
            raise SeedsError(bad.message, key="seeds") from None
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        sid = host if parts.port is None else f"{host}:{parts.port}"
        sid = sid.replace(":", "_")
        if not _ID_RE.fullmatch(sid):
            raise SeedsError(f"URL {url!r} has an unusable host name", key="seeds")
        groups.setdefault(sid, []).append(url)
    sources = []
    for sid, group in groups.items():
        values: dict[str, object] = {"id": sid, "start_urls": tuple(dict.fromkeys(group))}
        values.update(extra)
        sources.append(_build(values, file=None, label=sid))
    return sources


def resolve_seeds(arg: str, *, only: str | None = None) -> list[Source]:
    """The spider's ``-a seeds=...``: a source file or comma-separated URLs.

    An existing file, or a path ending in ``.toml``, is loaded with
    :func:`load_sources`; otherwise it must be comma-separated http(s) URLs
    given to :func:`sources_from_urls`. ``only`` keeps just the source with that id.
    """
    if not isinstance(arg, str) or not arg.strip():
        raise SeedsError(
            "expected a .toml source file or comma-separated http(s) URLs, got nothing",
            key="seeds",
        )
    text = arg.strip()
    if os.path.isfile(text) or ("://" not in text and text.lower().endswith(".toml")):
        return load_sources(text, only=only)
    if "://" not in text:
        raise SeedsError(
            f"expected a .toml source file or comma-separated http(s) URLs, got {text!r}",
            key="seeds",
        )
    sources = sources_from_urls(text)
    if only is None:
        return sources
    matching = [s for s in sources if s.id == only]
    if not matching:
        present = ", ".join(repr(s.id) for s in sources)
        raise SeedsError(f"no such source; the URLs give {present}", source=only)
    return matching
