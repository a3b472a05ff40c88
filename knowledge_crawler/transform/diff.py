"""Unified diffs of stored page text (SPEC F-RETRIEVAL ``changes``).

Pure module: two texts in, one diff out. Stored content is markdown with one
paragraph, heading or list item a line, so a line diff shows which paragraphs
moved, with a few lines of context around each.
"""

from __future__ import annotations

import difflib

__all__ = ["DEFAULT_CONTEXT", "text_diff"]

#: lines of unchanged text shown around each change
DEFAULT_CONTEXT = 2


def text_diff(
    old: str,
    new: str,
    *,
    old_label: str = "before",
    new_label: str = "after",
    context: int = DEFAULT_CONTEXT,
) -> str:
    """The unified diff from ``old`` to ``new``, lines joined by ``\\n``; ``""`` if equal.

    ``old_label`` and ``new_label`` name the two sides on the ``---`` and ``+++``
    lines (e.g. the times each text was fetched). Line endings do not count: the
    texts are compared line by line, and a missing final newline is no change.

    >>> print(text_diff("a\\nb\\nc", "a\\nB\\nc", old_label="t0", new_label="t1"))
    --- t0
    +++ t1
    @@ -1,3 +1,3 @@
     a
    -b
    +B
     c
    >>> text_diff("same\\n", "same")
    ''
    """
    if context < 0:
        raise ValueError(f"context must be >= 0, got {context}")
    lines = difflib.unified_diff(
        old.splitlines(),
        new.splitlines(),
        fromfile=old_label,
        tofile=new_label,
        n=context,
        lineterm="",
    )
    return "\n".join(lines)
