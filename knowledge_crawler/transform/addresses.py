"""Private, loopback and link-local destinations: the hosts a crawl must not reach (F-SAFETY).

Pure module (standard library only). A page, a redirect or a sitemap may point the
crawler at an address of its own machine or network (``http://169.254.169.254/``,
the cloud metadata service; ``http://10.0.0.1/``; ``http://localhost/``). Such a
destination is refused unless the source's own URLs are there (see
:func:`allowed_private_hosts`) or a setting allows it; the Scrapy glue calls
these functions before a request is sent and again when a name is resolved.

**Which addresses** (:func:`address_kind`, :func:`is_private_address`): every
address that is not public unicast, from explicit tables rather than
:mod:`ipaddress`'s ``is_private``, whose ranges differ between Python releases:

* IPv4: ``0.0.0.0/8`` (unspecified, "this network"; connecting to ``0.0.0.0``
  reaches the local machine), ``10/8``, ``172.16/12``, ``192.168/16`` (private),
  ``100.64/10`` (shared: carrier-grade NAT), ``127/8`` (loopback),
  ``169.254/16`` (link-local, cloud metadata), ``192.0.0/24`` (IETF protocol
  assignments), ``192.0.2/24``, ``198.51.100/24``, ``203.0.113/24``
  (documentation), ``198.18/15`` (benchmarking), ``192.88.99/24`` (6to4 relay),
  ``224/4`` (multicast), ``240/4`` (reserved, broadcast included);
* IPv6: ``::`` (unspecified), ``::1`` (loopback), ``fe80::/10`` (link-local),
  ``fec0::/10`` (site-local), ``fc00::/7`` (unique local: private),
  ``64:ff9b:1::/48`` (local-use NAT64), ``ff00::/8`` (multicast),
  ``2001::/23`` (IETF protocol assignments, Teredo included), ``2001:db8::/32``
  and ``3fff::/20`` (documentation), and anything outside ``2000::/3`` (not
  global unicast: ``::/8`` with the IPv4-compatible ``::a.b.c.d``, ``100::/64``);
  an address that embeds an IPv4 address is judged by it: IPv4-mapped
  ``::ffff:a.b.c.d`` (Twisted's resolver connects to ``a.b.c.d`` itself),
  NAT64 ``64:ff9b::a.b.c.d`` and 6to4 ``2002:AABB:CCDD::``.

**Which host spellings** (:func:`literal_host_address`): a URL host that names
an address without DNS. Scrapy keeps a URL's host as written and its default
resolver hands it to ``socket.gethostbyname``, whose numeric parsing
(``inet_aton``) accepts far more than dotted quads, so all of these connect to
``127.0.0.1``: ``2130706433`` (one 32-bit number), ``0x7f000001``, ``0x7f.0.0.1``,
``0177.0.0.1`` (octal), ``127.1`` and ``127.0.1`` (the last part fills the
remaining bytes), ``127.000.000.001``. They are parsed as ``inet_aton`` parses
them, plus what browsers' URL parsers add (``0x`` alone is 0, one trailing dot),
so nothing that connects escapes; IPv6 in brackets (``[::1]``, zone ids as
``%25eth0``) too. The host is percent-decoded and NFKC-normalised first
(fullwidth digits and dots), since another download handler might decode
what Scrapy's keeps. ``08`` or ``1.2.3.4.5`` are not numbers: they are names.

**Which names** (:func:`is_local_name`): names that stand for this machine or
its network without asking public DNS: :data:`LOCAL_NAMES` (``localhost``,
``ip6-localhost``, ...), any name under :data:`LOCAL_SUFFIXES` (``*.localhost``
RFC 6761, ``*.local`` mDNS RFC 6762, ``*.home.arpa`` RFC 8375, ``*.internal``
(ICANN's private-use TLD, e.g. ``metadata.google.internal``), ``*.localdomain``),
and every single-label name (``intranet``, ``metadata``), which the system
resolver completes with the local search domains. Other names are judged when
they are resolved, by the address they resolve to.

>>> literal_host_address("0x7f.1"), literal_host_address("[0:0:0:0:0:0:0:1]")
('127.0.0.1', '::1')
>>> address_kind("169.254.169.254"), address_kind("::ffff:10.0.0.1"), address_kind("8.8.8.8")
('link-local', 'private', None)
>>> refusal_reason("2130706433"), refusal_reason("metadata.google.internal")
('loopback address 127.0.0.1', "local name 'metadata.google.internal'")
>>> refusal_reason("localhost", allowed=allowed_private_hosts(["http://localhost:8000/"]))
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable
from functools import lru_cache
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from urllib.parse import unquote, urlsplit

__all__ = [
    "LOCAL_NAMES",
    "LOCAL_SUFFIXES",
    "address_kind",
    "allowed_private_hosts",
    "host_key",
    "is_local_name",
    "is_private_address",
    "literal_host_address",
    "private_host_reason",
    "refusal_reason",
    "url_host",
    "url_hosts",
]

#: Names of this machine in common ``/etc/hosts`` files (compared lower-case, no trailing dot).
LOCAL_NAMES: frozenset[str] = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "localhost4",
        "localhost4.localdomain4",
        "localhost6",
        "localhost6.localdomain6",
        "ip6-localhost",
        "ip6-loopback",
        "ip6-localnet",
        "ip6-mcastprefix",
        "ip6-allnodes",
        "ip6-allrouters",
        "broadcasthost",
    }
)

#: Special-use domains whose names are never public: every name under them is local.
LOCAL_SUFFIXES: tuple[str, ...] = (
    ".localhost",
    ".local",
    ".home.arpa",
    ".internal",
    ".localdomain",
)

_IPV4_TABLE: tuple[tuple[IPv4Network, str], ...] = tuple(
    (IPv4Network(net), kind)
    for net, kind in (
        ("0.0.0.0/8", "unspecified"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared (carrier-grade NAT)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "reserved"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "reserved"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
    )
)

_IPV6_TABLE: tuple[tuple[IPv6Network, str], ...] = tuple(
    (IPv6Network(net), kind)
    for net, kind in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("64:ff9b:1::/48", "private"),
        ("2001::/23", "reserved"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
        ("fc00::/7", "private"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)
_GLOBAL_UNICAST = IPv6Network("2000::/3")
_NAT64 = IPv6Network("64:ff9b::/96")

#: one part of a numeric IPv4 host as inet_aton reads it: hex, octal (leading 0) or decimal
_IPV4_PART = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")
_FULL_STOPS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})


def _normal(host: str) -> str:
    """The host as a resolver would see it: decoded, NFKC, lower-case, no brackets or end dot."""
    text = unquote(host) if "%" in host else host
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).translate(_FULL_STOPS)
    text = text.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return text.rstrip(".") if ":" not in text else text


def _ipv4_number(text: str) -> int | None:
    """``inet_aton``'s reading of ``text`` (1 to 4 parts; the last fills the rest), else None."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or not all(_IPV4_PART.fullmatch(p) for p in parts):
        return None
    values: list[int] = []
    try:
        for part in parts:
            if part[:2] in ("0x", "0X"):
                values.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part[0] == "0":
                values.append(int(part, 8))
            else:
                values.append(int(part))
    except ValueError:  # more digits than int() reads
        return None
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    number = last
    for i, value in enumerate(head):
        number |= value << (8 * (3 - i))
    return number


@lru_cache(maxsize=4096)
def _parse_literal(host: str) -> IPv4Address | IPv6Address | None:
    text = _normal(host)
    if not text:
        return None
    if ":" in text:
        try:
            return IPv6Address(text)
        except ValueError:
            return None
    number = _ipv4_number(text)
    return None if number is None else IPv4Address(number)


def literal_host_address(host: str) -> str | None:
    """The address a URL host names without DNS, in its standard form; None for a name.

    >>> literal_host_address("0177.0.0.1"), literal_host_address("[0:0::1]")
    ('127.0.0.1', '::1')
    >>> literal_host_address("example.com") is None, literal_host_address("1.2.3.4.5") is None
    (True, True)
    """
    address = _parse_literal(host)
    return None if address is None else str(address)


def _ipv4_kind(address: IPv4Address) -> str | None:
    for network, kind in _IPV4_TABLE:
        if address in network:
            return kind
    return None


def _kind(address: IPv4Address | IPv6Address) -> str | None:
    if isinstance(address, IPv4Address):
        return _ipv4_kind(address)
    plain = IPv6Address(int(address))  # without a zone id
    mapped = plain.ipv4_mapped
    if mapped is not None:
        return _ipv4_kind(mapped)
    if plain in _NAT64:
        return _ipv4_kind(IPv4Address(int(plain) & 0xFFFFFFFF))
    if plain.sixtofour is not None:
        return _ipv4_kind(plain.sixtofour)
    for network, kind in _IPV6_TABLE:
        if plain in network:
            return kind
    return None if plain in _GLOBAL_UNICAST else "reserved"


def address_kind(ip: str | IPv4Address | IPv6Address) -> str | None:
    """Why ``ip`` is not a public address (``loopback``, ``private``, ``link-local``, ...),
    None when it is public unicast. ``ip`` may be spelled as any URL host that
    :func:`literal_host_address` reads; :class:`ValueError` when it is not an address.

    >>> address_kind("100.64.1.2"), address_kind("fd00::1"), address_kind("0")
    ('shared (carrier-grade NAT)', 'private', 'unspecified')
    """
    address = ip if isinstance(ip, IPv4Address | IPv6Address) else _parse_literal(ip)
    if address is None:
        raise ValueError(f"not an IP address: {ip!r}")
    return _kind(address)


def is_private_address(ip: str | IPv4Address | IPv6Address) -> bool:
    """Whether ``ip`` is anything but a public unicast address (see :func:`address_kind`).

    >>> is_private_address("127.0.0.1"), is_private_address("93.184.215.14")
    (True, False)
    """
    return address_kind(ip) is not None


def is_local_name(host: str) -> bool:
    """Whether the name ``host`` stands for this machine or its network (no DNS asked).

    >>> is_local_name("LOCALHOST."), is_local_name("api.localhost"), is_local_name("intranet")
    (True, True, True)
    >>> is_local_name("localhost.example.com"), is_local_name("example.com")
    (False, False)
    """
    name = host_key(host)
    if not name or _parse_literal(name) is not None:
        return False
    return name in LOCAL_NAMES or "." not in name or name.endswith(LOCAL_SUFFIXES)


@lru_cache(maxsize=4096)
def host_key(host: str) -> str:
    """How hosts are compared: an address in its standard form (``127.1`` is
    ``127.0.0.1``), a name lower-case, IDNA-encoded, without trailing dot.

    >>> host_key("2130706433"), host_key("Bücher.Example."), host_key("[::0001]")
    ('127.0.0.1', 'xn--bcher-kva.example', '::1')
    """
    address = _parse_literal(host)
    if address is not None:
        return str(address)
    name = _normal(host)
    try:
        return name.encode("idna").decode("ascii")
    except UnicodeError:
        return name


def private_host_reason(host: str) -> str | None:
    """What makes ``host`` a private destination (``link-local address 169.254.169.254``,
    ``local name 'localhost'``), None when it is a public address or an ordinary name."""
    address = _parse_literal(host)
    if address is not None:
        kind = _kind(address)
        return None if kind is None else f"{kind} address {address}"
    if is_local_name(host):
        return f"local name {host_key(host)!r}"
    return None


def refusal_reason(host: str | None, allowed: Collection[str] = ()) -> str | None:
    """Why a request to ``host`` must not be sent, None when it may.

    ``allowed`` holds :func:`host_key` forms of the hosts that are allowed even
    though private (those of the source's own URLs, :func:`allowed_private_hosts`).
    A URL without a host (``None``) is not this check's business.
    """
    if not host:
        return None
    reason = private_host_reason(host)
    if reason is None or host_key(host) in allowed:
        return None
    return reason


def url_host(url: str) -> str | None:
    """The host of an absolute URL as :func:`urllib.parse.urlsplit` reads it (what Scrapy
    connects to), None when it has none or is malformed.

    >>> url_host("http://user@[::1]:8080/a"), url_host("http://127.0.0.1:80@evil.example/")
    ('::1', 'evil.example')
    """
    try:
        return urlsplit(url.strip()).hostname or None
    except ValueError:
        return None


def url_hosts(urls: Iterable[str]) -> frozenset[str]:
    """The :func:`host_key` forms of the hosts of ``urls`` (malformed URLs left out)."""
    return frozenset(host_key(h) for h in map(url_host, urls) if h)


def allowed_private_hosts(urls: Iterable[str]) -> frozenset[str]:
    """The hosts of a source's own URLs that are private destinations: allowed for that source.

    Give it the source's ``start_urls`` (and the discovery URLs it names itself:
    sitemaps, feeds, API): an operator who points a source at ``http://localhost:8000/``
    or ``http://10.1.2.3/wiki/`` means it. Host keys (:func:`host_key`), so another
    spelling of the same address is the same host.

    >>> sorted(allowed_private_hosts(["http://127.1:8000/", "https://example.com/", "http://[::1]/"]))
    ['127.0.0.1', '::1']
    """
    return frozenset(h for h in url_hosts(urls) if private_host_reason(h) is not None)
