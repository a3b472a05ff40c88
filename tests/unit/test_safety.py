"""Private, loopback and link-local destinations: which hosts are refused (F-SAFETY, pure part)."""

from __future__ import annotations

import socket
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from knowledge_crawler.config import DEFAULTS, KcConfig
from knowledge_crawler.errors import ConfigError
from knowledge_crawler.transform.addresses import (
    LOCAL_NAMES,
    address_kind,
    allowed_private_hosts,
    host_key,
    is_local_name,
    is_private_address,
    literal_host_address,
    private_host_reason,
    refusal_reason,
    url_host,
    url_hosts,
)

# -- host spellings that name an address ----------------------------------------------------


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),  # one 32-bit number
        ("0x7f000001", "127.0.0.1"),
        ("0X7F000001", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("0x7f.0x0.0x0.0x1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),  # octal
        ("00000177.0.0.1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("127.000.000.001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),  # the last part fills the remaining bytes
        ("127.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.0.0.0x1", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),  # a trailing dot, as browsers read it
        ("0", "0.0.0.0"),
        ("0x", "0.0.0.0"),  # WHATWG: an empty hex number is 0 (inet_aton refuses it)
        ("10.0.0.1", "10.0.0.1"),
        ("0xa000001", "10.0.0.1"),
        ("167772161", "10.0.0.1"),
        ("169.254.169.254", "169.254.169.254"),
        ("2852039166", "169.254.169.254"),
        ("0251.0376.0251.0376", "169.254.169.254"),
        ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
        ("169.254.43518", "169.254.169.254"),
        ("4294967295", "255.255.255.255"),
        ("1.16777215", "1.255.255.255"),
        ("%31%32%37.0.0.1", "127.0.0.1"),  # percent-encoded
        ("\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11", "127.0.0.1"),  # fullwidth
        ("127\u30020\u30020\u30021", "127.0.0.1"),  # ideographic full stops
        ("::1", "::1"),
        ("[::1]", "::1"),
        ("[0:0:0:0:0:0:0:1]", "::1"),
        ("[::]", "::"),
        ("fe80::1%25eth0", "fe80::1%eth0"),  # zone id, percent-encoded in URLs
        ("[FD00::1]", "fd00::1"),
    ],
)
def test_literal_host_address(host: str, address: str) -> None:
    assert literal_host_address(host) == address


@pytest.mark.parametrize(
    "host",
    [
        "example.com",
        "localhost",
        "1.2.3.4.5",  # five parts: a name
        "256.1",  # a part before the last above 255
        "1.16777216",  # the last part too big for the bytes left
        "4294967296",
        "0x100000000",
        "08",  # not octal
        "0x7g",
        "1e2",
        "-1",
        "+1",
        "1..1",
        ".1",
        "",
        "[::1",
        "::1::2",
        "xn--9hbcp.0.0.1",
        "1" * 5000,  # more digits than int() reads
    ],
)
def test_names_are_not_addresses(host: str) -> None:
    assert literal_host_address(host) is None


def _number(value: int, radix: str) -> str:
    return {"hex": f"0x{value:x}", "oct": f"0{value:o}", "dec": str(value)}[radix]


_RADIX = st.sampled_from(["hex", "oct", "dec"])
_NUMERIC_HOSTS = st.lists(
    st.tuples(st.integers(0, 300) | st.integers(0, 2**32), _RADIX), min_size=1, max_size=5
).map(lambda parts: ".".join(_number(v, r) for v, r in parts))


@pytest.mark.skipif(sys.platform != "linux", reason="compares with glibc's inet_aton")
@given(st.text(alphabet="0123456789abcdefxX.", min_size=1, max_size=24) | _NUMERIC_HOSTS)
def test_every_number_inet_aton_reads_is_read_alike(host: str) -> None:
    """What Scrapy's resolver (gethostbyname -> inet_aton) connects to, we read the same;
    we read more only where browsers do (``0x`` alone, one trailing dot)."""
    try:
        expected: str | None = socket.inet_ntoa(socket.inet_aton(host))
    except OSError:
        expected = None
    ours = literal_host_address(host)
    if expected is not None:
        assert ours == expected
    elif ours is not None:
        assert host.endswith(".") or "0x" in host.lower(), (host, ours)


# -- which addresses are private --------------------------------------------------------------


@pytest.mark.parametrize(
    ("ip", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),  # cloud metadata
        ("100.64.0.1", "shared (carrier-grade NAT)"),
        ("100.127.255.254", "shared (carrier-grade NAT)"),
        ("0.0.0.0", "unspecified"),  # connecting to it reaches this machine
        ("0.1.2.3", "unspecified"),
        ("192.0.0.8", "reserved"),
        ("192.0.2.1", "documentation"),
        ("198.51.100.7", "documentation"),
        ("203.0.113.9", "documentation"),
        ("198.18.0.1", "benchmarking"),
        ("192.88.99.1", "reserved"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("fec0::1", "site-local"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped: judged by the IPv4 address
        ("::ffff:7f00:1", "loopback"),
        ("::ffff:a9fe:a9fe", "link-local"),
        ("::ffff:10.0.0.1", "private"),
        ("64:ff9b::10.0.0.1", "private"),  # NAT64
        ("64:ff9b::a9fe:a9fe", "link-local"),
        ("64:ff9b:1::1", "private"),  # local-use NAT64
        ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
        ("2002:a00:1::1", "private"),
        ("::127.0.0.1", "reserved"),  # IPv4-compatible (deprecated)
        ("100::1", "reserved"),  # discard-only
        ("2001::1", "reserved"),  # IETF protocol assignments (Teredo)
        ("2001:db8::1", "documentation"),
        ("3fff::1", "documentation"),
        ("4000::1", "reserved"),  # outside global unicast
        ("2130706433", "loopback"),  # any literal spelling
    ],
)
def test_private_address_kinds(ip: str, kind: str) -> None:
    assert address_kind(ip) == kind
    assert is_private_address(ip)


@pytest.mark.parametrize(
    "ip",
    [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.215.14",
        "100.63.255.255",  # just below shared space
        "100.128.0.0",  # just above
        "172.15.255.255",
        "172.32.0.0",
        "192.169.0.1",
        "169.255.0.1",
        "11.0.0.1",
        "2606:4700:4700::1111",
        "2a00:1450:4001:80b::200e",
        "::ffff:8.8.8.8",  # mapped public
        "64:ff9b::8.8.8.8",  # NAT64 of a public address
        "2002:808:808::1",  # 6to4 of 8.8.8.8
    ],
)
def test_public_addresses(ip: str) -> None:
    assert address_kind(ip) is None
    assert not is_private_address(ip)


def test_a_name_is_not_an_address() -> None:
    with pytest.raises(ValueError, match="not an IP address"):
        address_kind("example.com")


# -- local names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        *sorted(LOCAL_NAMES),
        "LOCALHOST",
        "localhost.",
        "api.localhost",
        "a.b.localhost",
        "printer.local",
        "router.home.arpa",
        "metadata.google.internal",
        "db.internal",
        "box.localdomain",
        "intranet",  # one label: completed with the local search domains
        "metadata",
        "wpad",
        "ｌｏｃａｌｈｏｓｔ",  # fullwidth  # noqa: RUF001
    ],
)
def test_local_names(host: str) -> None:
    assert is_local_name(host)
    assert private_host_reason(host) == f"local name {host_key(host)!r}"


@pytest.mark.parametrize(
    "host",
    [
        "example.com",
        "localhost.example.com",
        "local.example.com",
        "internal.example.com",
        "notlocalhost.com",
        "127.0.0.1",  # an address, not a name
        "",
    ],
)
def test_other_names_are_not_local(host: str) -> None:
    assert not is_local_name(host)


# -- the decision ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data", "link-local address 169.254.169.254"),
        ("http://10.0.0.1/", "private address 10.0.0.1"),
        ("http://[::1]/", "loopback address ::1"),
        ("http://[::ffff:169.254.169.254]/", "link-local address ::ffff:a9fe:a9fe"),
        ("http://localhost/", "local name 'localhost'"),
        ("http://LocalHost.:8080/", "local name 'localhost'"),
        ("http://2130706433/", "loopback address 127.0.0.1"),
        ("http://0x7f.0.0.1/", "loopback address 127.0.0.1"),
        ("http://127.1/", "loopback address 127.0.0.1"),
        ("http://0/", "unspecified address 0.0.0.0"),
        ("http://user:pw@127.0.0.1:8000/", "loopback address 127.0.0.1"),
        ("https://metadata.google.internal/computeMetadata/v1/", "local name"),
        ("http://example.com/", None),
        ("http://127.0.0.1.example.com/", None),  # a name that merely starts with digits
        ("http://127.0.0.1:80@example.com/", None),  # the host is example.com
        ("http://93.184.215.14/", None),
        ("http://[2606:4700::1111]/", None),
    ],
)
def test_refusal_of_urls(url: str, reason: str | None) -> None:
    got = refusal_reason(url_host(url))
    if reason is None:
        assert got is None
    else:
        assert got is not None and got.startswith(reason), got


@pytest.mark.parametrize(
    ("start_urls", "url", "refused"),
    [
        # the source's own private host is allowed, in any spelling of the same address
        (["http://127.0.0.1:8000/"], "http://127.0.0.1:9999/x", False),
        (["http://127.0.0.1:8000/"], "http://2130706433/x", False),
        (["http://127.1/"], "http://127.0.0.1/x", False),
        (["http://localhost:8000/"], "http://LOCALHOST.:8000/x", False),
        (["http://[::1]:8000/"], "http://[0::1]/", False),
        (["http://10.1.2.3/wiki/"], "http://10.1.2.3/wiki/page", False),
        # ... and nothing else private
        (["http://localhost:8000/"], "http://127.0.0.1:8000/", True),
        (["http://127.0.0.1:8000/"], "http://localhost:8000/", True),
        (["http://127.0.0.1:8000/"], "http://10.0.0.1/", True),
        (["http://10.1.2.3/wiki/"], "http://10.1.2.4/", True),
        (["http://10.1.2.3/wiki/"], "http://169.254.169.254/latest/meta-data", True),
        (["https://example.com/"], "http://169.254.169.254/", True),
        (["https://example.com/"], "http://api.localhost/", True),
        # public destinations are not this check's business
        (["https://example.com/"], "https://other.example/", False),
        (["http://localhost:8000/"], "https://example.com/", False),
    ],
)
def test_refusal_with_the_sources_own_hosts(start_urls: list[str], url: str, refused: bool) -> None:
    allowed = allowed_private_hosts(start_urls)
    assert (refusal_reason(url_host(url), allowed) is not None) is refused


@pytest.mark.parametrize(
    ("urls", "allowed"),
    [
        (["http://localhost:8000/", "http://localhost:8000/about"], {"localhost"}),
        (["http://127.0.0.1:8000/"], {"127.0.0.1"}),
        (["http://0x7f.1/"], {"127.0.0.1"}),
        (["http://[::1]/", "http://[fe80::1%25eth0]/"], {"::1", "fe80::1%eth0"}),
        (["https://example.com/", "http://10.0.0.5/"], {"10.0.0.5"}),
        (["https://example.com/"], set()),
        (["http://intranet/", "http://wiki.internal/"], {"intranet", "wiki.internal"}),
        (["not a url", "http://[::1/"], set()),
    ],
)
def test_allowed_private_hosts(urls: list[str], allowed: set[str]) -> None:
    assert allowed_private_hosts(urls) == allowed


def test_host_keys_compare_spellings() -> None:
    assert url_hosts(["http://Example.COM./a", "http://example.com:81/"]) == {"example.com"}
    assert host_key("0x7f.1") == host_key("127.0.0.1") == "127.0.0.1"
    assert host_key("Bücher.example") == "xn--bcher-kva.example"
    assert host_key("[::0001]") == "::1"
    assert url_host("http://[::1") is None
    assert url_host("mailto:x@example.com") is None
    assert refusal_reason(None) is None


# -- the setting -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("False", False),
        ("1", True),
        ("0", False),
        (" yes ", True),
        ("off", False),
        (1, True),
        (0, False),
    ],
)
def test_the_setting_reads_booleans(raw: object, value: bool) -> None:
    config = KcConfig.from_settings({"KC_ALLOW_PRIVATE_ADDRESSES": raw})
    assert config.allow_private_addresses is value
    assert DEFAULTS.allow_private_addresses is False


@pytest.mark.parametrize("raw", ["maybe", "", 2, 0.5])
def test_a_bad_boolean_names_the_setting(raw: object) -> None:
    with pytest.raises(ConfigError, match="KC_ALLOW_PRIVATE_ADDRESSES: expected true or false"):
        KcConfig.from_settings({"KC_ALLOW_PRIVATE_ADDRESSES": raw})
