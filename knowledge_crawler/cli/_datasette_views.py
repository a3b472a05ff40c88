"""A Datasette plugin ``browse`` registers: a binary cell of a view shown by its size.

Datasette links every binary cell it shows to a download of that row's value, addressed
by the row's primary key or rowid. A view has neither, so a view with a BLOB column (the
``pages`` view's MinHash signatures) answered 500 (``path_from_row_pks`` wants a
``rowid``; simonw/datasette#2601). Here such a cell reads ``<Binary: N bytes>``, as
Datasette writes it, without the link it cannot make; the JSON keeps the value itself.
Imported only when Datasette is installed.
"""

from __future__ import annotations

from typing import Any

from datasette import hookimpl

__all__ = ["render_cell"]


@hookimpl  # type: ignore[untyped-decorator]  # datasette has no type information
def render_cell(value: Any, table: str | None, database: str, datasette: Any) -> Any:
    if not isinstance(value, bytes) or table is None:
        return None

    async def shown() -> str | None:
        if table not in await datasette.get_database(database).view_names():
            return None  # a table's row has an address: Datasette links its download
        size = len(value)
        return f"<Binary: {size:,} byte{'' if size == 1 else 's'}>"

    return shown()
