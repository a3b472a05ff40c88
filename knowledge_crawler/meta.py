"""Names of the ``Request.meta`` keys the project reads or writes.

``kc_source``  (str)  id of the source a request belongs to; set by the spider.
``kc_depth``   (int)  link distance from the source's start URLs; 0 for a start URL.
``kc_key``     (str)  canonical URL of the requested URL (before any redirect).
``kc_start``   (bool) the request is for one of the source's start URLs.
``kc_conditional`` (bool) the request carries the stored page's validators.
``kc_discovery`` (str) id of the source a discovery request (sitemap, feed, API page,
                robots.txt for its Sitemap lines) works for; such a request has no
                ``kc_source``: it is not a page.
``kc_adapter``   (str)  the discovery adapter: ``sitemap``, ``feed`` or ``api``.
``kc_checkpoint`` (str) the key of the adapter's checkpoint (``api``, ``sitemap:URL``).
``kc_retry``     (``sync.retry.AttemptDecision``) what the retry middleware made of the
                request's last failure; read by the spider's errback.
"""

from __future__ import annotations

__all__ = [
    "ADAPTER",
    "CHECKPOINT",
    "CONDITIONAL",
    "DEPTH",
    "DISCOVERY",
    "HOST_UNREACHABLE",
    "KEY",
    "RETRY",
    "SOURCE",
    "START",
]

SOURCE = "kc_source"
DEPTH = "kc_depth"
KEY = "kc_key"
START = "kc_start"
CONDITIONAL = "kc_conditional"
DISCOVERY = "kc_discovery"
ADAPTER = "kc_adapter"
CHECKPOINT = "kc_checkpoint"
RETRY = "kc_retry"
#: the error kind of the host's robots.txt fetch when it could not reach the host at all
HOST_UNREACHABLE = "kc_host_unreachable"
#: a page request built and not yet in the queue (the spider counts them: KC_QUEUE_MEMORY_REQUESTS)
IN_TRANSIT = "kc_in_transit"
