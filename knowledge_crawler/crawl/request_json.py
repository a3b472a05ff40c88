"""Requests as JSON, for a queue several processes share (F-SCALE): never pickle.

Anyone who can write to a shared crawl's Redis can put an entry in its queue, so an
entry is data to check, not code to run. scrapy-redis's default serializer is pickle,
and unpickling runs whatever the entry says; here a request is Scrapy's
:meth:`Request.to_dict <scrapy.Request.to_dict>` written as JSON (headers as
Latin-1 text, the body as base64), and read back with
:func:`scrapy.utils.request.request_from_dict` only once the entry has the shape
``to_dict`` gives: a request class (``_class``) must be a :class:`scrapy.Request`
subclass already imported (nothing is imported on an entry's word), a callback must
be a method of the spider. Anything else is :class:`BadEntry`.

A request whose meta JSON cannot hold (an object of some library's) is
:class:`UnserializableRequest`: the scheduler keeps it in its own process.

``dumps`` and ``loads`` (request dicts) also make this module a scrapy-redis
serializer (``SCHEDULER_SERIALIZER``): no queue class of scrapy-redis falls back to
pickle.
"""

from __future__ import annotations

import base64
import binascii
import json
import sys
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.utils.request import request_from_dict

if TYPE_CHECKING:
    from scrapy import Spider

__all__ = ["BadEntry", "UnserializableRequest", "decode", "dumps", "encode", "loads"]

#: what an entry may hold beside what ``Request.attributes`` names
_OWN_KEYS = frozenset({"_class", "callback", "errback", "headers"})


class BadEntry(ValueError):
    """A queue entry that is not a request this crawl wrote."""


class UnserializableRequest(TypeError):
    """A request JSON cannot hold (its meta or cb_kwargs hold other objects)."""


def encode(request: Request, spider: Spider | None) -> bytes:
    """``request`` as one JSON entry (UTF-8)."""
    try:
        d = request.to_dict(spider=spider)
    except ValueError as exc:  # a callback that is not a method of the spider
        raise UnserializableRequest(str(exc)) from None
    return dumps(d)


def decode(data: bytes | str, spider: Spider | None) -> Request:
    """The request of an entry :func:`encode` wrote; :class:`BadEntry` for anything else."""
    d = loads(data)
    for name in ("callback", "errback"):
        value = d.get(name)
        if value is None:
            continue
        if (
            not isinstance(value, str)
            or spider is None
            or not callable(getattr(spider, value, None))
        ):
            raise BadEntry(f"not a request: {name} {value!r} is not a method of the spider")
    try:
        return request_from_dict(d, spider=spider)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise BadEntry(f"not a request: {type(exc).__name__}: {exc}") from None


def dumps(d: dict[str, Any]) -> bytes:
    """A request dict (``Request.to_dict``) as JSON: headers as Latin-1 text, the body as
    base64; :class:`UnserializableRequest` when it holds what JSON cannot."""
    d = dict(d)
    try:
        d["headers"] = [
            [bytes(name).decode("latin-1"), [bytes(v).decode("latin-1") for v in values]]
            for name, values in d.get("headers", {}).items()
        ]
        d["body"] = base64.b64encode(d.get("body") or b"").decode("ascii")
        return json.dumps(d, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise UnserializableRequest(f"{d.get('url')}: {exc}") from None


def loads(data: bytes | str) -> dict[str, Any]:
    """The request dict of a JSON entry, checked to have the shape ``dumps`` gives (its
    request class one already imported); :class:`BadEntry` for anything else."""
    try:
        d = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadEntry(f"not JSON: {exc}") from None
    if not isinstance(d, dict) or not isinstance(d.get("url"), str):
        raise BadEntry("not a request: no url")
    cls = _request_class(d.get("_class"))
    unknown = set(d) - _OWN_KEYS - set(cls.attributes)
    if unknown:
        raise BadEntry(f"not a request: unknown field(s) {', '.join(sorted(unknown))}")
    try:
        d["headers"] = {
            name.encode("latin-1"): [v.encode("latin-1") for v in values]
            for name, values in d.get("headers") or ()
        }
        d["body"] = base64.b64decode(d.get("body") or "", validate=True)
    except (TypeError, ValueError, AttributeError, binascii.Error) as exc:
        raise BadEntry(f"not a request: headers or body: {exc}") from None
    return d


def _request_class(name: object) -> type[Request]:
    """The request class an entry names: :class:`Request` when none, else a subclass
    already imported. ``load_object`` would import any module the entry names."""
    if name is None:
        return Request
    if not isinstance(name, str):
        raise BadEntry(f"not a request: _class {name!r}")
    module, _, attr = name.rpartition(".")
    cls = getattr(sys.modules.get(module), attr, None)
    if not isinstance(cls, type) or not issubclass(cls, Request):
        raise BadEntry(f"not a request: _class {name!r} is not a request class")
    return cls
