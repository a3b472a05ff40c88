"""Names of the ``Request.meta`` keys the project reads or writes.

``kc_source``  (str)  id of the source a request belongs to; set by the spider.
``kc_depth``   (int)  link distance from the source's start URLs; 0 for a start URL.
"""

from __future__ import annotations

__all__ = ["DEPTH", "SOURCE"]

SOURCE = "kc_source"
DEPTH = "kc_depth"
