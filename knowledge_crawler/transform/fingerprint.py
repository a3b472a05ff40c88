"""Content fingerprints (SPEC F-PIPELINE step 4): SHA-256 of normalised text.

Pure module. The MinHash signature for near duplicates lives in
:mod:`knowledge_crawler.transform.minhash`.
"""

from __future__ import annotations

import hashlib

__all__ = ["content_hash", "normalize_for_hash"]


def normalize_for_hash(text: str) -> str:
    """Whitespace collapsed, trimmed and lower-cased: what the hash is taken over.

    ``str.split()`` splits at the characters ``\\s`` matches (``str.isspace``), so this is
    ``re.sub(r"\\s+", " ", text).strip()``, a few times faster.
    """
    return " ".join(text.split()).lower()


def content_hash(text: str) -> str:
    """Hex SHA-256 of :func:`normalize_for_hash` of ``text``.

    >>> content_hash("Aura  Desk\\nLamp") == content_hash("aura desk lamp")
    True
    """
    return hashlib.sha256(normalize_for_hash(text).encode("utf-8")).hexdigest()
