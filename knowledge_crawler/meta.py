"""Names of the ``Request.meta`` keys the project reads or writes.

``kc_source``  (str)  id of the source a request belongs to; set by the spider.
``kc_depth``   (int)  link distance from the source's start URLs; 0 for a start URL.
``kc_key``     (str)  canonical URL of the requested URL (before any redirect).
``kc_start``   (bool) the request is for one of the source's start URLs.
``kc_conditional`` (bool) the request carries the stored page's validators.
"""

from __future__ import annotations

__all__ = ["CONDITIONAL", "DEPTH", "KEY", "SOURCE", "START"]

SOURCE = "kc_source"
DEPTH = "kc_depth"
KEY = "kc_key"
START = "kc_start"
CONDITIONAL = "kc_conditional"
