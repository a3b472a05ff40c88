"""The request and reply records shared by the server and the page modules (no logic here)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["HTML", "BadRequest", "Reply", "Request"]

HTML = "text/html; charset=utf-8"


@dataclass
class Reply:
    """A response before conditional-request handling and noise filling.

    A streamed reply sets ``stream`` (called once, after the headers are sent; it must yield
    exactly ``length`` bytes in all) instead of ``body``; it is never answered with 304.
    """

    status: int = 200
    body: bytes | str = b""
    content_type: str = HTML
    etag: str | None = None
    last_modified: datetime | None = None
    headers: dict[str, str] = field(default_factory=dict)
    stream: Callable[[], Iterator[bytes]] | None = None
    length: int = 0


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[0] if values else default


class BadRequest(Exception):
    """Raised by handlers for invalid parameters (answered with 400)."""
