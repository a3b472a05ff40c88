"""The raw archive's WARC writer and reader: rotation, offsets, byte-identical bodies."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from knowledge_crawler.archive.warc import (
    ArchiveError,
    ArchiveFileError,
    ArchiveReader,
    WarcWriter,
    archive_dir,
    archive_headers,
    read_record,
)
from knowledge_crawler.errors import ConfigError

HEADERS = [
    ("Content-Type", "text/html; charset=utf-8"),
    ("Content-Encoding", "gzip"),
    ("Transfer-Encoding", "chunked"),
    ("Content-Length", "17"),
    ("Set-Cookie", "a=1"),
    ("Set-Cookie", "b=2"),
]


def body(i: int, size: int = 4000) -> bytes:
    """An incompressible-enough body: the archive's size grows with every record."""
    return f"<html><body><p>page {i}</p>".encode() + os.urandom(size) + b"</body></html>"


def test_records_rotate_by_size_and_each_reads_back_at_its_offset(tmp_path: Path) -> None:
    written = []
    with WarcWriter(tmp_path, max_bytes=20_000, tag="run7") as writer:
        for i in range(12):
            b = body(i)
            where = writer.write_response(
                f"https://example.com/p{i}", 200, HEADERS, b, date="2026-03-01T12:00:00.000001Z"
            )
            written.append((where, b))
    files = sorted({where.file for where, _ in written})
    assert len(files) >= 2 and files == sorted(writer.files)
    for name in files:
        assert name.startswith("kc-") and "-run7-" in name and name.endswith(".warc.gz")
        assert (tmp_path / name).stat().st_size <= 20_000  # rotated before going past it
    with ArchiveReader(tmp_path) as reader:
        for i, (where, b) in enumerate(written):
            url, status, headers, got = reader.read(where.file, where.offset)
            assert (url, status, got) == (f"https://example.com/p{i}", 200, b)
            names = [name for name, _ in headers]
            assert "Content-Encoding" not in names and "Transfer-Encoding" not in names
            assert ("Content-Length", str(len(b))) in headers
            assert [v for n, v in headers if n == "Set-Cookie"] == ["a=1", "b=2"]
    assert read_record(tmp_path, *(written[3][0].file, written[3][0].offset)).body == written[3][1]


def test_the_files_are_valid_multi_member_warc(tmp_path: Path) -> None:
    with WarcWriter(tmp_path, max_bytes=10**9, tag="pid1") as writer:
        offsets = [
            writer.write_response(f"https://example.com/{i}", 200, HEADERS, body(i, 100)).offset
            for i in range(3)
        ]
    [name] = writer.files
    kinds, found = [], []
    with open(tmp_path / name, "rb") as f:
        records = ArchiveIterator(f)
        for record in records:  # warcio reads the whole file, record after record
            kinds.append(record.rec_type)
            found.append(records.get_record_offset())
    assert kinds == ["warcinfo", "response", "response", "response"]
    assert found[1:] == offsets
    # one gzip member per record: each offset starts a gzip stream of its own
    data = (tmp_path / name).read_bytes()
    for offset in offsets:
        assert data[offset : offset + 2] == b"\x1f\x8b"
    assert gzip.decompress(data).startswith(b"WARC/1.1\r\nWARC-Type: warcinfo")


def test_the_date_is_the_fetch_time_and_a_rendered_page_says_so(tmp_path: Path) -> None:
    with WarcWriter(tmp_path, max_bytes=10**6, tag="t") as writer:
        where = writer.write_response(
            "https://example.com/app",
            200,
            [],
            b"<html>built</html>",
            date="2026-03-01T12:00:00.123456Z",
            extra={"KC-Rendered": "playwright"},
        )
    with open(tmp_path / where.file, "rb") as f:
        f.seek(where.offset)
        record = next(iter(ArchiveIterator(f)))
        assert record.rec_headers.get_header("WARC-Date") == "2026-03-01T12:00:00.123456Z"
        assert record.rec_headers.get_header("KC-Rendered") == "playwright"


def test_a_failed_write_gives_up_the_file_and_the_next_record_starts_another(
    tmp_path: Path,
) -> None:
    writer = WarcWriter(tmp_path, max_bytes=10**6, tag="t")
    first = writer.write_response("https://example.com/1", 200, [], b"<p>one</p>")

    real = writer._file
    assert real is not None

    class Full:  # the disk fills up under the open file
        def write(self, data: bytes) -> int:
            raise OSError(28, "No space left on device")

        def close(self) -> None:
            real.close()

    writer._file = Full()  # type: ignore[assignment]
    with pytest.raises(OSError):
        writer.write_response("https://example.com/2", 200, [], b"<p>two</p>")
    third = writer.write_response("https://example.com/3", 200, [], b"<p>three</p>")
    writer.close()
    assert third.file != first.file and len(writer.files) == 2
    assert read_record(tmp_path, third.file, third.offset).body == b"<p>three</p>"
    assert read_record(tmp_path, first.file, first.offset).body == b"<p>one</p>"


def test_reading_what_is_not_there_says_which_file(tmp_path: Path) -> None:
    with WarcWriter(tmp_path, max_bytes=10**6, tag="t") as writer:
        where = writer.write_response("https://example.com/1", 200, [], b"<p>one</p>")
    with pytest.raises(ArchiveFileError, match="no such file"):
        read_record(tmp_path, "kc-gone.warc.gz", 0)
    with pytest.raises(ArchiveFileError):
        read_record(tmp_path, "../outside.warc.gz", 0)
    with pytest.raises(ArchiveError, match=r"warcinfo record, not a response"):
        read_record(tmp_path, where.file, 0)
    with pytest.raises(ArchiveError, match=where.file):
        read_record(tmp_path, where.file, where.offset + 3)  # inside a gzip member
    with pytest.raises(ArchiveError, match="no record"):
        read_record(tmp_path, where.file, where.offset + where.length)  # the end


def test_archived_headers_say_what_the_body_is() -> None:
    assert archive_headers(HEADERS, 5) == [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Content-Length", "5"),
        ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"),
    ]
    assert archive_headers([("content-length", "1"), ("Content-Length", "2")], 9) == [
        ("content-length", "9")
    ]


def test_the_archive_folder_is_beside_the_database_unless_set() -> None:
    assert archive_dir("sqlite:///data/knowledge.db") == Path("data/archive")
    assert archive_dir("sqlite:////srv/kc/k.db") == Path("/srv/kc/archive")
    assert archive_dir("sqlite:///data/knowledge.db", "/warc") == Path("/warc")
    assert archive_dir("postgresql://db/kc", "/warc") == Path("/warc")
    # a database without a folder: the working folder's data/archive, as the default SQLite
    assert archive_dir("postgresql://db/kc") == Path("data/archive")
    with pytest.raises(ConfigError, match="KC_ARCHIVE_DIR"):
        archive_dir("sqlite:///:memory:")


def test_the_reextract_module_reads_the_key_the_crawl_writes() -> None:
    from knowledge_crawler.archive.reextract import META_SIGNATURES, params_from_fingerprint
    from knowledge_crawler.crawl.runtime import META_SIGNATURES as WRITTEN
    from knowledge_crawler.transform.minhash import MinHashParams

    assert META_SIGNATURES == WRITTEN
    params = MinHashParams(num_perm=64, seed=9, shingle_size=2)
    assert params_from_fingerprint(params.signature_fingerprint()) == params
    assert params_from_fingerprint(params.fingerprint()) == params
    for bad in ("mh0:p128:s1:k3", "nonsense", "mh1:x:y:z"):
        with pytest.raises(ConfigError):
            params_from_fingerprint(bad)


def test_a_crawl_checks_the_archive_folder_before_any_request(tmp_path: Path) -> None:
    from knowledge_crawler.pipelines.archive import check_archive

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    db = f"sqlite:///{tmp_path}/k.db"
    with pytest.raises(ConfigError, match="cannot create the archive folder"):
        check_archive({"KC_DATABASE_URL": db, "KC_ARCHIVE_DIR": str(blocker / "archive")})
    check_archive(
        {"KC_DATABASE_URL": db, "KC_ARCHIVE_DIR": str(blocker), "KC_ARCHIVE_ENABLED": "0"}
    )
    check_archive({"KC_DATABASE_URL": db})
    assert (tmp_path / "archive").is_dir()
