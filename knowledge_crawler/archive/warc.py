"""The raw archive (SPEC F-ARCHIVE): fetched responses kept in gzip-compressed WARC files.

No Scrapy, no store: files and bytes only. The crawl writes through
:class:`WarcWriter` (``pipelines/archive.py`` runs it on one thread of its own);
``knowledge-crawler reextract`` reads back with :class:`ArchiveReader` (or
:func:`read_record`) at the location the database keeps for each page.

What is written
---------------
* WARC/1.1 files named ``kc-<UTC time the file was opened>-<run id or pid>-<seq>.warc.gz``
  (``kc-20260301T120000Z-run12-00001.warc.gz``), each opened new (never appended to)
  and starting with a ``warcinfo`` record. A file is closed and the next one opened
  when the next record would take it past ``max_bytes`` (``KC_ARCHIVE_MAX_BYTES``);
  only a single record larger than that makes a file larger.
* One ``response`` record per page response: ``WARC-Target-URI`` the URL that
  answered, ``WARC-Date`` the page's ``fetched_at``, the status line, the headers
  and the body. Each record is one gzip member (as warcio writes them), so it can be
  read alone from its byte offset: a page's location is ``(file relative to the
  archive folder, offset of the member)``. A record is written whole and flushed to
  the operating system before its location is handed out, so a database row never
  points at bytes still in a buffer of this process.
* The body is the body **as the spider received it**: Scrapy has already undone the
  ``Content-Encoding`` (gzip, br, ...) and the chunked ``Transfer-Encoding``, so those
  two headers are left out of the archived header block (it would otherwise claim
  an encoding the body no longer has), and a ``Content-Length`` header is set to the
  length of the body as stored. Every other header is kept as received, in order.
* A page rendered in a browser (``render = "playwright"``/``"auto"``) is archived as
  what the spider read, the page's HTML after its scripts ran, with the extension
  field ``KC-Rendered: playwright`` in the record's WARC header.

No ``request`` records are written: the crawl's requests are fully described by the
URL and the project's settings, and re-extraction needs only the responses.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path, PurePosixPath
from typing import IO, Any, NamedTuple

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from knowledge_crawler import __version__
from knowledge_crawler.config import display_url
from knowledge_crawler.errors import ConfigError, KcError

__all__ = [
    "ARCHIVE_FOLDER",
    "DEFAULT_ARCHIVE_DIR",
    "DROPPED_HEADERS",
    "ArchiveError",
    "ArchiveFileError",
    "ArchiveLocation",
    "ArchiveReader",
    "ArchivedResponse",
    "WarcWriter",
    "archive_dir",
    "archive_headers",
    "read_record",
]

#: the archive's folder beside a SQLite database when ``KC_ARCHIVE_DIR`` is empty
ARCHIVE_FOLDER = "archive"
#: the archive of a database that has no folder (PostgreSQL) without KC_ARCHIVE_DIR:
#: relative to the working folder, where the default SQLite database keeps its archive
DEFAULT_ARCHIVE_DIR = Path("data") / ARCHIVE_FOLDER

#: headers left out of an archived header block: Scrapy has undone them on the body
DROPPED_HEADERS = frozenset({"content-encoding", "transfer-encoding"})

#: zlib level of each record's gzip member (zlib's and gzip's default)
GZIP_LEVEL = 6

_SOFTWARE = f"knowledge_crawler/{__version__}"
_SUFFIX = ".warc.gz"


class ArchiveError(KcError):
    """An archived record cannot be read: its file is missing or unreadable, or the
    bytes at its offset are not a WARC response record. One line naming the file."""


class ArchiveFileError(ArchiveError):
    """The archive file itself cannot be opened (missing, not readable, a bad name)."""


@dataclass(frozen=True, slots=True)
class ArchiveLocation:
    """Where a record was written: file (relative to the archive folder), offset, size."""

    file: str
    offset: int
    #: bytes of the record's gzip member
    length: int


class ArchivedResponse(NamedTuple):
    """A response read back from the archive: ``url, status, headers, body = ...``."""

    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        """The last value of header ``name`` (any case), as Scrapy's ``headers.get`` gives it."""
        wanted = name.lower()
        found = None
        for key, value in self.headers:
            if key.lower() == wanted:
                found = value
        return found


def archive_dir(database_url: str, setting: str = "") -> Path:
    """The archive folder: ``setting`` (``KC_ARCHIVE_DIR``) when given, else the SQLite
    database's folder + ``archive`` (``sqlite:///data/knowledge.db`` -> ``data/archive``),
    else (a PostgreSQL database) :data:`DEFAULT_ARCHIVE_DIR` in the working folder, where
    the default SQLite database keeps its archive too.

    :class:`ConfigError` for an in-memory SQLite database without the setting.

    >>> archive_dir("sqlite:///data/knowledge.db")
    PosixPath('data/archive')
    >>> archive_dir("postgresql://db/kc", "/srv/warc"), archive_dir("postgresql://db/kc")
    (PosixPath('/srv/warc'), PosixPath('data/archive'))
    """
    if setting.strip():
        return Path(setting.strip())
    prefix = "sqlite:///"
    if not database_url.startswith(prefix):
        return DEFAULT_ARCHIVE_DIR
    path = database_url[len(prefix) :]
    if not path or path == ":memory:":
        raise ConfigError(
            f"KC_ARCHIVE_DIR must be set: the archive has no folder beside "
            f"{display_url(database_url)!r} "
            "(or set KC_ARCHIVE_ENABLED=false)"
        )
    return Path(path).parent / ARCHIVE_FOLDER


def archive_headers(headers: Iterable[tuple[str, str]], body_length: int) -> list[tuple[str, str]]:
    """The header block to archive for a body as the spider received it.

    ``Content-Encoding`` and ``Transfer-Encoding`` are left out (the body is decoded),
    a ``Content-Length`` says the body's length; the rest stays as received, in order.

    >>> archive_headers([("Content-Type", "text/html"), ("Content-Encoding", "gzip"),
    ...                  ("Content-Length", "120")], 410)
    [('Content-Type', 'text/html'), ('Content-Length', '410')]
    """
    kept: list[tuple[str, str]] = []
    has_length = False
    for name, value in headers:
        lower = name.lower()
        if lower in DROPPED_HEADERS or (lower == "content-length" and has_length):
            continue
        if lower == "content-length":
            has_length = True
            value = str(body_length)
        kept.append((name, value))
    return kept


def _status_line(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} Unknown"


def _file_time(now: datetime) -> str:
    return now.strftime("%Y%m%dT%H%M%SZ")


class WarcWriter:
    """Appends response records to rotating WARC files in one folder. Not thread-safe:
    one thread writes (records go to the files in the order they are written)."""

    def __init__(self, directory: str | os.PathLike[str], *, max_bytes: int, tag: str) -> None:
        """``tag`` names the writer's files (a run id, a pid): ``kc-<time>-<tag>-<seq>.warc.gz``."""
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be > 0, got {max_bytes}")
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.tag = tag
        #: files opened by this writer, in order (names relative to the folder)
        self.files: list[str] = []
        self._file: IO[bytes] | None = None
        self._name = ""
        self._size = 0
        self._records = 0  # response records in the current file
        self._seq = 0
        # Records are written plain and compressed here, one gzip member each, at zlib's
        # default level: warcio's own wrapper compresses at level 9, about twice the CPU
        # for 0.6% fewer bytes on HTML.
        self._warc = WARCWriter(io.BytesIO(), gzip=False, warc_version="1.1")

    def write_response(
        self,
        url: str,
        status: int,
        headers: Iterable[tuple[str, str]],
        body: bytes,
        *,
        date: str | None = None,
        extra: Mapping[str, str] | None = None,
    ) -> ArchiveLocation:
        """Append one ``response`` record; where it is.

        ``headers`` as received (see :func:`archive_headers` for what is left out),
        ``date`` the ``WARC-Date`` (ISO-8601 UTC, ``Z``; default now), ``extra`` more
        WARC header fields. After an :class:`OSError` the file is given up as it is
        and the next record starts a new file, so no record follows a torn one.
        """
        warc_headers = dict(extra or {})
        if date:
            warc_headers["WARC-Date"] = date
        http_headers = StatusAndHeaders(
            _status_line(status), archive_headers(headers, len(body)), protocol="HTTP/1.1"
        )
        record = self._warc.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            warc_headers_dict=warc_headers,
            http_headers=http_headers,
        )
        data = self._member(record)
        try:
            if self._file is not None and self._records and self._size + len(data) > self.max_bytes:
                self._close_file()
            if self._file is None:
                self._open_file()
            assert self._file is not None
            offset = self._size
            self._file.write(data)
            self._file.flush()
        except BaseException:
            self._abandon_file()
            raise
        self._size += len(data)
        self._records += 1
        return ArchiveLocation(self._name, offset, len(data))

    def _member(self, record: Any) -> bytes:
        """A warcio record as bytes: one gzip member."""
        out = io.BytesIO()
        self._warc.out = out
        self._warc.write_record(record)
        gz = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, zlib.MAX_WBITS + 16)
        return gz.compress(out.getbuffer()) + gz.flush()

    def _open_file(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        now = datetime.now(UTC)
        while True:
            self._seq += 1
            name = f"kc-{_file_time(now)}-{self.tag}-{self._seq:05d}{_SUFFIX}"
            try:
                f = open(self.directory / name, "xb")  # noqa: SIM115 (kept open across calls)
            except FileExistsError:
                continue
            break
        info = self._member(
            self._warc.create_warcinfo_record(
                name, {"software": _SOFTWARE, "format": "WARC File Format 1.1"}
            )
        )
        try:
            f.write(info)
        except BaseException:
            f.close()
            raise
        self._file, self._name, self._size, self._records = f, name, len(info), 0
        self.files.append(name)

    def _close_file(self) -> None:
        f, self._file = self._file, None
        if f is None:
            return
        try:
            f.flush()
            os.fsync(f.fileno())
        finally:
            f.close()

    def _abandon_file(self) -> None:
        """After a failed write: close the file as it is; the next record opens a new one."""
        f, self._file = self._file, None
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()

    @property
    def current(self) -> str | None:
        """The file records go to now (relative to the folder), or None."""
        return self._name if self._file is not None else None

    def close(self) -> None:
        """Flush, sync and close the current file. The writer may write again afterwards."""
        self._close_file()

    def __enter__(self) -> WarcWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _safe_path(directory: Path, file: str) -> Path:
    """``directory / file`` for a stored file name; :class:`ArchiveError` for a name that
    is absolute or leaves the folder."""
    parts = PurePosixPath(file).parts
    if not file or PurePosixPath(file).is_absolute() or ".." in parts or "\\" in file:
        raise ArchiveFileError(f"not an archive file name: {file!r}")
    return directory.joinpath(*parts)


class ArchiveReader:
    """Reads records by location, keeping each file it opened open until :meth:`close`.

    Safe to share between threads (one read at a time).
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._files: dict[str, IO[bytes]] = {}
        self._lock = threading.Lock()

    def read(self, file: str, offset: int) -> ArchivedResponse:
        """The response record at ``offset`` of ``file``; :class:`ArchiveError` if none."""
        path = _safe_path(self.directory, file)
        with self._lock:
            f = self._files.get(file)
            if f is None:
                try:
                    f = self._files[file] = open(path, "rb")  # noqa: SIM115 (cached)
                except FileNotFoundError:
                    raise ArchiveFileError(f"{path}: no such file") from None
                except OSError as exc:
                    raise ArchiveFileError(f"{path}: {exc.strerror or exc}") from None
            return _read_at(f, path, offset)

    def close(self) -> None:
        with self._lock:
            files, self._files = self._files, {}
        for f in files.values():
            f.close()

    def __enter__(self) -> ArchiveReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_record(directory: str | os.PathLike[str], file: str, offset: int) -> ArchivedResponse:
    """The response record at ``offset`` of ``file`` in the archive folder ``directory``.

    Raises :class:`ArchiveError` (one line naming the file) when the file is missing
    or unreadable or no response record starts there.
    """
    with ArchiveReader(directory) as reader:
        return reader.read(file, offset)


def _read_at(f: IO[bytes], path: Path, offset: int) -> ArchivedResponse:
    where = f"{path} at offset {offset}"
    if offset < 0:
        raise ArchiveError(f"{where}: not a record offset")
    try:
        f.seek(offset)
        record: Any = next(iter(ArchiveIterator(f)), None)
        if record is None:
            raise ArchiveError(f"{where}: no record (the file ends before it)")
        if record.rec_type != "response" or record.http_headers is None:
            raise ArchiveError(f"{where}: a {record.rec_type} record, not a response")
        url = record.rec_headers.get_header("WARC-Target-URI") or ""
        status = int(record.http_headers.get_statuscode())
        headers = [(str(k), str(v)) for k, v in record.http_headers.headers]
        body = record.raw_stream.read()
    except ArchiveError:
        raise
    except OSError as exc:
        raise ArchiveError(f"{where}: {exc.strerror or exc}") from None
    except Exception as exc:  # warcio, zlib, a bad status line: not a readable record
        message = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        raise ArchiveError(f"{where}: not a readable WARC record ({message})") from None
    return ArchivedResponse(url, status, headers, bytes(body))
