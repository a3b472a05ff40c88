"""The project's exception hierarchy.

Pure module: imported by every layer, imports nothing from the package.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "KcError",
    "LeaseHeldError",
    "SchemaMismatchError",
    "SeedsError",
    "StoreError",
    "TransientStoreError",
]


class KcError(Exception):
    """Base class of every error the project raises on purpose."""


class ConfigError(KcError):
    """A setting or argument is invalid or contradicts another one."""


class SeedsError(ConfigError):
    """A source file (``seeds/*.toml``) or a ``seeds=`` argument is invalid.

    ``str(err)`` is one line naming the file, the source and the key, e.g.
    ``seeds/demo.toml: source 'blog': key 'depth_limit': expected an integer, got 'ten'``.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        source: str | None = None,
        key: str | None = None,
    ) -> None:
        self.file = file
        self.source = source
        self.key = key
        self.message = message
        parts = []
        if file:
            parts.append(file)
        if source is not None:
            parts.append(f"source {source!r}")
        if key is not None:
            parts.append(f"key {key!r}")
        parts.append(message)
        super().__init__(": ".join(parts))


class LeaseHeldError(KcError):
    """Another writer holds the lease on a source this one would write (F-STATE).

    ``str(err)`` is one line naming the holder: its command, run, pid and host.
    """


class StoreError(KcError):
    """The store could not be opened or a write failed for a reason other than one bad row."""


class SchemaMismatchError(StoreError):
    """The database was written by a newer schema, or with other fingerprint parameters."""


class TransientStoreError(StoreError):
    """The database could not be used for a reason that may pass, not because of a record.

    Locked or busy (another writer), an I/O error, a full disk, a file that cannot
    be opened right now: the write is retried, and its rows are never quarantined.
    """
