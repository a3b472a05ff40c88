"""``knowledge-crawler extract``: main content of saved HTML pages, as markdown or text.

Start-up time matters (the batch mode is benchmarked including process start-up), so this
module imports only click at module level; the extractor is imported on first use.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from knowledge_crawler.transform.extract import Extraction

__all__ = ["extract", "extract_command"]

PROG = "knowledge-crawler"
EXIT_BAD_INPUT = 2


class BadInput(Exception):
    """One input file cannot be extracted (missing, a directory, empty, not HTML)."""


def _error(message: str) -> None:
    click.echo(f"{PROG}: error: {message}", err=True)


def _read_page(path: Path) -> bytes:
    try:
        if not path.exists():
            raise BadInput(f"{path}: no such file")
        if path.is_dir():
            raise BadInput(f"{path}: is a directory")
        body = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if not body.strip():
        raise BadInput(f"{path}: empty file")
    from knowledge_crawler.transform.decode import looks_like_html

    if not looks_like_html(body):
        raise BadInput(f"{path}: not an HTML page (binary or other format)")
    return body


def _extract_file(path: Path) -> Extraction:
    from knowledge_crawler.transform.extract import extract as run_extract

    return run_extract(_read_page(path))


def _render(result: Extraction, fmt: str) -> str:
    return result.markdown if fmt == "markdown" else result.text


def _run_batch(in_dir: Path, out_dir: Path, fmt: str) -> int:
    if not in_dir.is_dir():
        _error(f"{in_dir}: not a directory")
        return EXIT_BAD_INPUT
    pages = sorted(p for p in in_dir.iterdir() if p.suffix.lower() in {".html", ".htm"})
    if not pages:
        _error(f"{in_dir}: no *.html files")
        return EXIT_BAD_INPUT
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _error(f"{out_dir}: cannot create output directory: {exc.strerror or exc}")
        return EXIT_BAD_INPUT

    ok = failed = 0

    def one(page: Path) -> None:
        nonlocal ok, failed
        try:
            result = _extract_file(page)
        except BadInput as exc:
            failed += 1
            _error(str(exc))
            return
        try:
            (out_dir / f"{page.stem}.txt").write_text(_render(result, fmt), encoding="utf-8")
        except OSError as exc:
            failed += 1
            _error(f"{out_dir / page.stem}.txt: cannot write: {exc.strerror or exc}")
            return
        ok += 1

    if sys.stderr.isatty():
        with click.progressbar(pages, label="extracting", file=sys.stderr) as bar:
            for page in bar:
                one(page)
    else:
        for page in pages:
            one(page)
    if failed:
        click.echo(f"{PROG}: {ok} page(s) extracted, {failed} failed", err=True)
    return 0 if ok else EXIT_BAD_INPUT


@click.command("extract")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--batch",
    nargs=2,
    type=click.Path(path_type=Path),
    metavar="IN_DIR OUT_DIR",
    default=None,
    help="Extract every IN_DIR/NAME.html to OUT_DIR/NAME.txt in one process.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "text"]),
    default=None,
    help="Output format (default: markdown for files, text for --batch).",
)
def extract(files: tuple[Path, ...], batch: tuple[Path, Path] | None, fmt: str | None) -> None:
    """Print the main content of saved HTML page(s) FILE..., or convert a directory.

    Exit status: 0 on success; 2 on bad input (missing file, directory, empty or non-HTML
    file). With --batch a bad page is reported on stderr and the batch goes on; the exit
    status is 0 if at least one page was extracted, else 2.
    """
    if batch:
        if files:
            _error("--batch takes IN_DIR OUT_DIR and no other FILE arguments")
            sys.exit(EXIT_BAD_INPUT)
        code = _run_batch(batch[0], batch[1], fmt or "text")
        sys.exit(code)
    if not files:
        _error("no input: give FILE... or --batch IN_DIR OUT_DIR")
        sys.exit(EXIT_BAD_INPUT)
    fmt = fmt or "markdown"
    bad = False
    for i, path in enumerate(files):
        try:
            result = _extract_file(path)
        except BadInput as exc:
            _error(str(exc))
            bad = True
            continue
        if len(files) > 1:
            click.echo(f"{'' if i == 0 else chr(10)}==> {path} <==")
        click.echo(_render(result, fmt))
    if bad:
        sys.exit(EXIT_BAD_INPUT)


extract_command = extract
