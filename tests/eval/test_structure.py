"""Structure survives extraction: checks per element on real pages, not bag-of-words F1.

The pages are documentation installed on the machine (the Rust book, reference and
Cargo book, Node.js API docs, the Valgrind manual, the libxslt tutorial): tables with
header rows and inline markup in cells, code blocks with indentation, tabs and a
language class, headings at four levels, nested lists and definition lists. Each check
names one element of the page and what ``extract().markdown``, as the crawl stores it
(``Extraction.cleaned()``), must hold for it. A page that is not installed or whose
bytes changed (SHA-256) is skipped, except in CI, where it is a failure.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from knowledge_crawler.transform.extract import extract

RUST = Path.home() / ".rustup/toolchains/stable-x86_64-unknown-linux-gnu/share/doc/rust/html"
PAGES = {
    "rust-book-data-types": (
        RUST / "book/ch03-02-data-types.html",
        "5acb91ad7b67ec88f58e95e865c553ffe394abf5acdd60e5c40992fd033dc7e9",
    ),
    "node-zlib": (
        Path("/usr/share/doc/nodejs/api/zlib.html"),
        "af4376e400dbe66e303b5481fa5c3319d6a2630b6311cab1c636b31db4f78310",
    ),
    "rust-reference-asm": (
        RUST / "reference/inline-assembly.html",
        "136397d86124651a6c89c2d6bb45175506b4ba04d33e53f352c66251d084796d",
    ),
    "cargo-update": (
        RUST / "cargo/commands/cargo-update.html",
        "3c98bb79056071ffbc6bdd4149bc17a266019eb577f1e93175890e157ac90557",
    ),
    "valgrind-core": (
        Path("/usr/share/doc/valgrind/html/manual-core.html"),
        "c66d6de5436219059c0880459bfbc9505cfcc1f9abf422906b92174e0aa56f88",
    ),
    "cargo-external-tools": (
        RUST / "cargo/reference/external-tools.html",
        "88844f99bcf847e4c75af8c4400f920ddfb3ab1376e6bb7034e3064c717b2147",
    ),
    "rust-reference-syntax-index": (
        RUST / "reference/syntax-index.html",
        "c9fc0999fa5154dd0d2d7c9f4d07fb715416ae026999f4a99daaf3254fd05c8a",
    ),
    "gtk-doc-keys": (
        Path("/usr/share/doc/libxslt1-dev/gtk-doc/html/libxslt/libxslt-keys.html"),
        "4bd7b9becc4b6accc65dcee455c30e8b3c375f592822649632d65f2b59c330de",
    ),
    "libxslt-tutorial": (
        Path("/usr/share/doc/libxslt1-dev/html/tutorial/libxslttutorial.html"),
        "6c7cc25ffe3837e7067d4d1709e3726b3ac7460ec0fc778a086c2fdc5b7ffd19",
    ),
}

_CACHE: dict[str, str] = {}


def _missing(why: str) -> None:
    """Skip, except in CI (``CI=true``), where the pages are installed (``make eval-docs``)
    and a check that cannot run is a failure."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why}: `make eval-docs` installs the pages the checks read")
    pytest.skip(why)


def stored_markdown(page: str) -> str:
    path, digest = PAGES[page]
    if page not in _CACHE:
        if not path.is_file():
            _missing(f"{path} is not installed")
        body = path.read_bytes()
        if hashlib.sha256(body).hexdigest() != digest:
            _missing(f"{path} changed since the checks were written")
        _CACHE[page] = extract(body).cleaned().markdown
    return _CACHE[page]


# -- reading markdown back into elements --------------------------------------------------

_FENCE = re.compile(r"^(`{3,})([^`\n]*)\n(.*?)\n\1$", re.MULTILINE | re.DOTALL)


def code_blocks(md: str) -> list[tuple[str, str]]:
    """(info string, content) of each fenced block."""
    return [(m.group(2), m.group(3)) for m in _FENCE.finditer(md)]


def tables(md: str) -> list[tuple[list[str], list[list[str]]]]:
    """(header cells, body rows) of each pipe table."""
    found = []
    lines = md.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("| ---"):
            header = _cells(lines[i])
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].startswith("| "):
                rows.append(_cells(lines[j]))
                j += 1
            found.append((header, rows))
            i = j
        else:
            i += 1
    return found


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


@dataclass(frozen=True)
class Check:
    page: str
    what: str
    kind: str  # "table", "code", "headings" (whole lines, in order), "lines" (adjacent)
    args: tuple[object, ...]


CHECKS = [
    # tables: header row kept, every cell in place, inline code in cells flattened to text
    Check(
        "rust-book-data-types",
        "Table 3-1 integer types: header row and rows",
        "table",
        (
            ["Length", "Signed", "Unsigned"],
            [["8-bit", "i8", "u8"], ["Architecture-dependent", "isize", "usize"]],
        ),
    ),
    Check(
        "rust-reference-syntax-index",
        "link-dense index table (symbol, name, links to uses) is kept, not taken for a menu",
        "table",
        (
            ["Symbol", "Name", "Use"],
            [["-", "Minus", "subtraction, negation"], ["/", "Slash", "division"]],
        ),
    ),
    Check(
        "rust-book-data-types",
        "Table 3-2 literals: a cell with inline code keeps its words and spacing",
        "table",
        (["Number literals", "Example"], [["Hex", "0xff"], ["Byte (u8 only)", "b'A'"]]),
    ),
    # code: language from the class, indentation and blank lines kept byte for byte
    Check(
        "rust-book-data-types",
        "floating-point example",
        "code",
        ("rust", "fn main() {\n    let x = 2.0; // f64\n\n    let y: f32 = 3.0; // f32\n}"),
    ),
    Check(
        "node-zlib",
        "ESM and CommonJS variants of one example are two blocks",
        "code",
        ("js", "import zlib from 'node:zlib';"),
    ),
    Check(
        "node-zlib",
        "multi-line import keeps its indentation",
        "code",
        ("js", "import {\n  createReadStream,\n  createWriteStream,\n} from 'node:fs';"),
    ),
    Check(
        "valgrind-core",
        "a bare <pre> (DocBook screen) is a code block",
        "code",
        ("", "valgrind --tool=memcheck ls -l"),
    ),
    Check(
        "libxslt-tutorial",
        "a bare <pre> program listing keeps its tabs and line breaks",
        "code",
        ("", "main(int argc, char **argv) {\n\tint i;\n\tconst char *params[16 + 1];"),
    ),
    # headings: levels kept as levels, permalink symbols not part of the text
    Check(
        "rust-book-data-types",
        "heading levels h3-h5",
        "headings",
        (["### Scalar Types", "#### Integer Types", "##### Integer Overflow"],),
    ),
    Check(
        "node-zlib",
        "headings without their '#' permalink, levels kept",
        "headings",
        (["## Zlib", "### Threadpool usage and performance considerations"],),
    ),
    Check(
        "libxslt-tutorial",
        "DocBook text straight in <body>: headings restored at their levels",
        "headings",
        (["## Introduction", "### Preparing to Parse", "### Parameters", "## A. The Code"],),
    ),
    # lists: nesting kept
    Check(
        "rust-reference-asm",
        "nested list under an operand kind",
        "lines",
        (
            [
                "- in(<reg>) <expr>",
                "  - <reg> can refer to a register class or an explicit register. "
                "The allocated register name is substituted into the asm template string.",
            ],
        ),
    ),
    Check(
        "node-zlib",
        "a nested explanation under its list item",
        "lines",
        (
            [
                "- zlib.constants.BROTLI_OPERATION_EMIT_METADATA",
                "  - This particular operation may be hard to use in a Node.js context, as the "
                "streaming layer makes it hard to know which data will end up in this frame. "
                "Also, there is currently no way to consume this data through the Node.js API.",
            ],
        ),
    ),
    Check(
        "cargo-update",
        "definition list: the definition nested under its term",
        "lines",
        (
            [
                "- --dry-run",
                "  - Displays what would be updated, but doesn\u2019t actually write the lockfile.",
            ],
        ),
    ),
    Check(
        "gtk-doc-keys",
        "headings of a page without a frame element, each section's and each entry's",
        "headings",
        (
            [
                "## Synopsis",
                "## Details",
                "### Macro NODE_IS_KEYED",
                "### xsltAddKey ()",
                "### xsltGetKey ()",
                "### xsltInitCtxtKeys ()",
            ],
        ),
    ),
    Check(
        "gtk-doc-keys",
        "an entry's signature, repeated from the synopsis, one parameter a line (<br>)",
        "lines",
        (
            [
                "### xsltAddKey ()",
                "",
                "```",
                "int\txsltAddKey\t\t\t(xsltStylesheetPtr style, ",
                "\t\t\t\t\t const xmlChar * name, ",
                "\t\t\t\t\t const xmlChar * nameURI, ",
                "\t\t\t\t\t const xmlChar * match, ",
                "\t\t\t\t\t const xmlChar * use, ",
                "\t\t\t\t\t xmlNodePtr inst)",
                "```",
                "",
                "add a key definition to a stylesheet",
            ],
        ),
    ),
    Check(
        "cargo-update",
        "inline code in a paragraph stays in its sentence",
        "lines",
        (
            [
                "This command will update dependencies in the Cargo.lock file to the latest "
                "version. If the Cargo.lock file does not exist, it will be created with the "
                "latest available versions.",
            ],
        ),
    ),
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: f"{c.page}: {c.what}")
def test_structure(check: Check) -> None:
    md = stored_markdown(check.page)
    if check.kind == "table":
        header, rows = check.args
        matching = [t for t in tables(md) if t[0] == header]
        assert matching, f"no table with header {header}: {[t[0] for t in tables(md)]}"
        body = matching[0][1]
        for row in rows:  # type: ignore[attr-defined]
            assert row in body, f"row {row} not in {body}"
    elif check.kind == "code":
        info, snippet = check.args
        blocks = code_blocks(md)
        assert any(i == info and snippet in c for i, c in blocks), (
            f"no ```{info} block holding {snippet!r}; blocks: {[b[0] for b in blocks]}"
        )
    elif check.kind == "lines":
        (lines,) = check.args
        joined = "\n".join(lines)  # type: ignore[arg-type]
        assert joined in md, f"not found in order: {joined!r}"
    elif check.kind == "headings":
        (wanted,) = check.args
        lines = md.split("\n")
        at = [lines.index(h) if h in lines else -1 for h in wanted]  # type: ignore[attr-defined]
        assert -1 not in at and at == sorted(at), f"headings {wanted} at lines {at}"
    else:  # pragma: no cover
        raise AssertionError(check.kind)


def test_javascript_examples_are_kept_byte_for_byte_with_their_language() -> None:
    """``language-javascript`` blocks (Cargo's JSON messages) are the page's own code:
    cleaning once dropped such fences as script leftovers, so they were written bare."""
    from lxml import html as lxml_html

    md = stored_markdown("cargo-external-tools")
    tree = lxml_html.fromstring(PAGES["cargo-external-tools"][0].read_bytes())
    wanted = [
        c.text_content().rstrip("\n") for c in tree.xpath('//code[@class="language-javascript"]')
    ]
    assert len(wanted) == 4
    kept = [c for i, c in code_blocks(md) if i == "javascript"]
    assert kept == wanted


def test_every_code_block_is_closed_and_tables_are_rectangular() -> None:
    for page in PAGES:
        md = stored_markdown(page)
        assert md.count("\n```") % 2 == 0 or md.startswith("```"), page
        for header, rows in tables(md):
            assert all(len(r) == len(header) for r in rows), (page, header)
