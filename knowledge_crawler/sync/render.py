"""HTTP or browser: when a page request goes to Chromium (SPEC F-RENDER).

Pure policy; the downloader middleware :mod:`knowledge_crawler.middlewares.render`
applies it. A source's ``render`` is one of:

``http``        never a browser.
``playwright``  every page is rendered, but a *stored* page is first checked with a
                plain conditional GET: a 304 costs no browser, and only a 200 (the
                page changed, or the server keeps no validators) is rendered.
``auto``        plain HTTP first; a 200 HTML response that is a script shell
                (:func:`knowledge_crawler.transform.shell.shell_signs`) is fetched again
                in the browser. Once rendering made a page of a host clearly longer, new
                pages of that host go to the browser at once; once it did not for
                :data:`GIVE_UP_AFTER` shells of a host and helped for none, shells of
                that host are no longer rendered (:func:`host_verdict`).

>>> browser_first("playwright", known=False, host_verdict=None)
True
>>> browser_first("playwright", known=True, host_verdict=None)  # conditional check first
False
>>> browser_after("auto", status=200, is_html=True, shell=True, host_verdict=None)
True
>>> browser_after("auto", status=304, is_html=False, shell=False, host_verdict=True)
False
"""

from __future__ import annotations

__all__ = ["GIVE_UP_AFTER", "browser_after", "browser_first", "host_verdict"]

#: renders of a host's shells that added no text before ``auto`` stops rendering its shells
GIVE_UP_AFTER = 3


def host_verdict(helped: int, not_helped: int) -> bool | None:
    """What rendering does for a host, from its renders so far: True (it helps), False
    (it does not) or None (not known yet).

    >>> host_verdict(0, 0), host_verdict(1, 5), host_verdict(0, 3)
    (None, True, False)
    """
    if helped:
        return True
    return False if not_helped >= GIVE_UP_AFTER else None


def browser_first(mode: str, *, known: bool, host_verdict: bool | None) -> bool:
    """Whether a page request goes straight to the browser.

    ``known``: the store holds the page (its request is a conditional check);
    ``host_verdict``: what rendering did for other pages of the host (True: it
    helped, False: it did not, None: not tried yet).
    """
    if mode == "http" or known:
        return False
    if mode == "playwright":
        return True
    return mode == "auto" and host_verdict is True


def browser_after(
    mode: str, *, status: int, is_html: bool, shell: bool, host_verdict: bool | None
) -> bool:
    """Whether a plain HTTP answer to a page request is fetched again in the browser.

    Only a 200 HTML page is: a 304 means the stored page is current, and errors,
    redirects and other types are left to the rest of the crawl.
    """
    if mode == "http" or status != 200 or not is_html:
        return False
    if mode == "playwright":
        return True
    return mode == "auto" and shell and host_verdict is not False
