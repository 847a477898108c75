"""Hostile input for the URL checker (issue 13): IPv6 forms that embed an IPv4 address and
every special-purpose range, over-long DNS names, the per-URL deadline, and EXIF
orientation in the fingerprint and the evaluator's decode.

Addresses that must never be contacted are checked two ways: the loopback server counts
its requests, and :func:`connections` records every connection aiohttp starts (it lets
only the loopback server through and fails the others at once, so a test never reaches
out of this machine).
"""

from __future__ import annotations

import errno
import io
import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohappyeyeballs
import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from skimage import data as skdata

from contrastkit.curation.images import ImageLimits, inspect_image, phash_distance
from contrastkit.curation.urls import CheckConfig, Status, check_urls
from contrastkit.curation.urls.addresses import AddressPolicy, embedded_ipv4, non_public_reason
from contrastkit.curation.urls.responses import FinalStatus, validate_url
from contrastkit.errors import ConfigError
from loopback import LoopbackServer, exif_rotated_jpeg, jpeg_bytes, redirect, static, trickle

CHELSEA = Image.fromarray(skdata.chelsea())  # 451 x 300: a turn shows in the size
JPEG = jpeg_bytes(CHELSEA)

STRICT = CheckConfig(connect_timeout=2, read_timeout=2, total_timeout=3, retries=0)


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    routes = {
        "/photo.jpg": static(JPEG),
        "/to-nat64-metadata": redirect("http://[64:ff9b::a9fe:a9fe]/latest/meta-data/"),
        "/to-6to4-private": redirect("http://[2002:a00:1::]/photo.jpg"),
        "/to-long-label": redirect("http://" + "a" * 64 + ".example.org/photo.jpg"),
        "/to-unparseable": redirect("http://@_[n:]@/x"),
        "/busy.jpg": static(b"slow down", "text/plain", 429, {"Retry-After": "2"}),
        "/trickle.jpg": trickle(JPEG, interval=1.0),
    }
    with LoopbackServer(routes) as running:
        yield running


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every address aiohttp starts a connection to. Only 127.0.0.1 (the loopback server,
    also as ::ffff:127.0.0.1) is really connected; anything else fails at once."""
    seen: list[str] = []
    original = aiohappyeyeballs.start_connection

    async def recording(addr_infos: Any, *args: Any, **kwargs: Any) -> socket.socket:
        addresses = [str(info[4][0]) for info in addr_infos]
        seen.extend(addresses)
        if all(a in ("127.0.0.1", "::ffff:127.0.0.1", "::ffff:7f00:1") for a in addresses):
            return await original(addr_infos, *args, **kwargs)
        raise OSError(errno.ENETUNREACH, "test: no connection outside the loopback server")

    monkeypatch.setattr(aiohappyeyeballs, "start_connection", recording)
    return seen


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every host name resolved through ``socket.getaddrinfo`` (what the guarded resolver
    uses); ``rebind.test`` resolves to 64:ff9b::7f00:1 (NAT64 form of 127.0.0.1), names
    under ``.invalid`` to nothing, without asking any DNS server."""
    seen: list[str] = []
    original = socket.getaddrinfo

    def recording(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(host))
        if host == "rebind.test":
            return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("64:ff9b::7f00:1", port, 0, 0))]
        if str(host).rstrip(".").endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return original(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", recording)
    return seen


# -- embedded IPv4 and the special-purpose registries -------------------------------------

LOOPBACK_FORMS = [
    pytest.param("::ffff:127.0.0.1", "IPv4-mapped", id="ipv4-mapped"),
    pytest.param("::ffff:0:127.0.0.1", "IPv4-translated", id="siit"),
    pytest.param("::127.0.0.1", "IPv4-compatible", id="ipv4-compatible"),
    pytest.param("64:ff9b::127.0.0.1", "NAT64", id="nat64"),
    pytest.param("2002:7f00:1::", "6to4", id="6to4"),
    pytest.param("2002:7f00:1:abcd::42", "6to4", id="6to4-host"),
]

EMBEDDED_ELSEWHERE = [
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254, the cloud metadata service
    "64:ff9b::10.1.2.3",
    "64:ff9b::100.64.0.1",
    "::ffff:169.254.169.254",
    "::ffff:0:192.168.1.1",
    "::10.0.0.1",
    "2002:a9fe:a9fe::1",
    "2002:c0a8:101::",
    "2002:c000:201::",  # 6to4 of 192.0.2.1 (documentation)
]

SPECIAL_IPV4 = [
    "0.0.0.0", "0.1.2.3", "10.0.0.1", "100.64.0.1", "100.127.255.254", "127.0.0.1",
    "127.255.255.254", "169.254.169.254", "172.16.0.1", "172.31.255.254", "192.0.0.1",
    "192.0.0.8", "192.0.0.9", "192.0.0.10", "192.0.0.170", "192.0.0.171", "192.0.2.1",
    "192.31.196.1", "192.52.193.1", "192.88.99.1", "192.168.0.1", "192.175.48.1",
    "198.18.0.1", "198.19.255.254", "198.51.100.1", "203.0.113.1", "224.0.0.1",
    "239.255.255.250", "240.0.0.1", "255.255.255.254", "255.255.255.255",
]  # fmt: skip

SPECIAL_IPV6 = [
    "::", "::1", "64:ff9b:1::1", "64:ff9b:1:abcd::7f00:1", "100::1", "100::ffff:ffff:ffff:ffff",
    "100:0:0:1::1", "2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:1::1",
    "2001:1::2", "2001:1::3", "2001:2::1", "2001:3::1", "2001:4:112::1", "2001:10::1",
    "2001:20::1", "2001:30::1", "2001:1ff::1", "2001:db8::1", "2001:db8:ffff::1",
    "2620:4f:8000::1", "3fff::1", "3fff:fff::1", "5f00::1", "fc00::1", "fd12:3456::1",
    "fe80::1", "febf::1", "fec0::1", "ff02::1", "ff0e::1", "4000::1", "8000::1", "1::1",
]  # fmt: skip

PUBLIC = [
    "8.8.8.8", "1.1.1.1", "93.184.216.34", "192.0.1.1", "198.20.0.1", "203.0.114.1",
    "2606:4700:4700::1111", "2a00:1450:4001:81c::200e", "2001:200::1",
    "::ffff:8.8.8.8", "::ffff:0:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1",
]  # fmt: skip


@pytest.mark.parametrize("address", SPECIAL_IPV4 + SPECIAL_IPV6 + EMBEDDED_ELSEWHERE)
def test_every_special_purpose_address_is_not_public(address: str) -> None:
    assert non_public_reason(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_and_their_embedded_forms_pass(address: str) -> None:
    assert non_public_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(("address", "form"), LOOPBACK_FORMS)
def test_the_embedded_ipv4_address_is_read(address: str, form: str) -> None:
    found = embedded_ipv4(ipaddress.IPv6Address(address))
    assert found is not None and form in found[0]
    assert found[1] == ipaddress.IPv4Address("127.0.0.1")
    reason = non_public_reason(ipaddress.ip_address(address))
    assert reason is not None and "127.0.0.1" in reason and "loopback" in reason


def test_teredo_is_refused_whatever_it_embeds() -> None:
    # Client 8.8.8.8 (bit-inverted in the last 32 bits), server 8.8.4.4: both public.
    teredo = ipaddress.IPv6Address("2001:0:808:404::f7f7:f7f7")
    assert embedded_ipv4(teredo) is None
    reason = non_public_reason(teredo)
    assert reason is not None and "Teredo" in reason


def test_ip_literals_of_every_form_are_blocked_before_any_connection(
    server: LoopbackServer, connections: list[str]
) -> None:
    literals = [p.values[0] for p in LOOPBACK_FORMS] + EMBEDDED_ELSEWHERE + SPECIAL_IPV6
    urls = [f"http://[{address}]:{server.port}/photo.jpg" for address in literals]
    urls += [f"http://{address}:{server.port}/photo.jpg" for address in SPECIAL_IPV4]
    before = server.hits["/photo.jpg"]
    results = check_urls(urls, STRICT)
    assert {r.url: r.status for r in results} == dict.fromkeys(urls, Status.BLOCKED_ADDRESS)
    assert all("non-public address" in r.detail for r in results)
    assert connections == [] and server.hits["/photo.jpg"] == before


def test_the_detail_names_the_embedded_address_and_its_range(server: LoopbackServer) -> None:
    [result] = check_urls([f"http://[64:ff9b::a9fe:a9fe]:{server.port}/x"], STRICT)
    assert result.status is Status.BLOCKED_ADDRESS
    assert "NAT64 form (64:ff9b::/96) of 169.254.169.254: link-local" in result.detail


@pytest.mark.parametrize("path", ["/to-nat64-metadata", "/to-6to4-private"])
def test_a_redirect_to_an_embedded_form_is_blocked(
    server: LoopbackServer, connections: list[str], path: str
) -> None:
    config = CheckConfig(allowed_networks=("127.0.0.1/32",), total_timeout=3, retries=0)
    [result] = check_urls([server.url(path)], config)
    assert result.status is Status.BLOCKED_ADDRESS, result.detail
    assert set(connections) == {"127.0.0.1"}  # the first hop only


@pytest.mark.parametrize("address", [p.values[0] for p in LOOPBACK_FORMS] + ["64:ff9b::a9fe:a9fe"])
def test_a_name_resolving_to_an_embedded_form_is_blocked(
    server: LoopbackServer, connections: list[str], address: str
) -> None:
    config = CheckConfig(resolve=(("images.example.org", address),), total_timeout=3, retries=0)
    [result] = check_urls([server.url("/photo.jpg", host="images.example.org")], config)
    assert result.status is Status.BLOCKED_ADDRESS
    assert f"resolves to non-public address {ipaddress.ip_address(address)}" in result.detail
    assert connections == []


def test_dns_answers_are_checked_in_the_embedded_form_too(
    server: LoopbackServer, connections: list[str], lookups: list[str]
) -> None:
    [result] = check_urls([server.url("/photo.jpg", host="rebind.test")], STRICT)
    assert result.status is Status.BLOCKED_ADDRESS
    assert "64:ff9b::7f00:1" in result.detail and "127.0.0.1: loopback" in result.detail
    assert lookups == ["rebind.test"] and connections == []


def test_allowing_an_ipv4_network_allows_its_embedded_forms(
    server: LoopbackServer, connections: list[str]
) -> None:
    config = CheckConfig(allowed_networks=("127.0.0.0/8",), total_timeout=3, retries=0)
    mapped = f"http://[::ffff:127.0.0.1]:{server.port}/photo.jpg"
    nat64 = f"http://[64:ff9b::7f00:1]:{server.port}/photo.jpg"
    before = server.hits["/photo.jpg"]
    ok, translated = check_urls([mapped, nat64], config)
    assert ok.status is Status.OK, ok.detail
    assert server.hits["/photo.jpg"] == before + 1
    # allowed, so it is tried (and fails here: no NAT64 gateway), never blocked
    assert translated.status is Status.CONNECTION_ERROR, translated.detail
    assert "64:ff9b::7f00:1" in connections

    [everything] = check_urls([mapped], CheckConfig(allow_private=True, total_timeout=3))
    assert everything.status is Status.OK
    other = CheckConfig(allowed_networks=("10.0.0.0/8",), total_timeout=3, retries=0)
    [still_blocked] = check_urls([mapped], other)
    assert still_blocked.status is Status.BLOCKED_ADDRESS


def test_an_allowed_ipv6_network_allows_its_own_addresses(connections: list[str]) -> None:
    config = CheckConfig(allowed_networks=("fd00::/8",), total_timeout=3, retries=0)
    [result] = check_urls(["http://[fd00::1]/photo.jpg"], config)
    assert result.status is Status.CONNECTION_ERROR and connections == ["fd00::1"]


# -- DNS names that cannot exist -----------------------------------------------------------


def test_over_long_dns_names_are_invalid_urls_and_never_resolved(
    server: LoopbackServer, lookups: list[str], connections: list[str]
) -> None:
    urls = [
        "http://" + "a" * 64 + ".example.org/photo.jpg",
        "https://images." + "b" * 100 + "/photo.jpg",
        "http://" + ".".join(["c" * 63] * 4) + ".org/photo.jpg",  # 259 characters
        "http://" + ".".join(["d" * 63] * 3 + ["e" * 54, "invalid."]) + "/x",  # 254 + dot
        "http://a..example.org/photo.jpg",
        "http://xn--zz.example.org/photo.jpg",  # not valid punycode
        server.url("/to-long-label"),
    ]
    results = check_urls(urls, CheckConfig(allowed_networks=("127.0.0.0/8",), retries=0))
    assert [r.status for r in results] == [Status.INVALID_URL] * len(urls)
    assert "label of 64 characters (the limit is 63)" in results[0].detail
    assert "host name of 259 characters (the limit is 253)" in results[2].detail
    assert lookups == [] and connections == ["127.0.0.1"]  # only the redirecting hop


def test_names_at_the_limits_are_looked_up(lookups: list[str]) -> None:
    longest_label = "a" * 63 + ".invalid"
    longest_name = ".".join(["d" * 63] * 3 + ["e" * 53, "invalid."])  # 253 + final dot
    assert len(longest_name) == 254
    results = check_urls([f"http://{longest_label}/x", f"http://{longest_name}/x"], STRICT)
    assert [r.status for r in results] == [Status.DNS_ERROR, Status.DNS_ERROR]
    assert sorted(lookups) == sorted([longest_label, longest_name])


def test_non_canonical_ipv4_spellings_never_reach_the_server(
    server: LoopbackServer, connections: list[str]
) -> None:
    spellings = ["127.1", "2130706433", "0127.0.0.1", "017700000001", "127.000.000.001",
                 "0x7f.0.0.1", "0x7f000001", "127.0.0.1."]  # fmt: skip
    urls = [f"http://{host}:{server.port}/photo.jpg" for host in spellings]
    before = server.hits["/photo.jpg"]
    results = check_urls(urls, STRICT)
    assert {r.status for r in results} <= {Status.INVALID_URL, Status.BLOCKED_ADDRESS}
    assert connections == [] and server.hits["/photo.jpg"] == before


HOSTILE_URLS = [
    "http://@_[n:]@/x",  # the URL parser fails with an IndexError
    "https://1b:]\uff46\u200b@[@/9\u200b9-::/",
    "http://xn--zz.example.org/",  # not valid punycode: fails only when decoded
    "http://xn--" + "a" * 70 + ".org/",
    "http://" + "\u00e9" * 70 + ".org/",
    "http://[::1/",
    "http://[v1.fe80::1]/",  # taken for an IP literal by the client: would skip the resolver
    "http://[v7.a:b.example.org]/",
    "http://[fe80::1%25lo]/",  # zone IDs: the lookup of "ADDRESS%ZONE" is the system's
    "http://[2606:4700::1111%25eth0]/",
    "http://127.0.0.1.:80/",
    "http://host:99999/",
    "http://host:-1/",
    "http://\u3002\u3002/",
]


def test_urls_the_parser_chokes_on_are_invalid_not_a_crash(
    server: LoopbackServer, lookups: list[str], connections: list[str]
) -> None:
    urls = [*HOSTILE_URLS, server.url("/to-unparseable")]
    results = check_urls(urls, CheckConfig(allowed_networks=("127.0.0.0/8",), retries=0))
    assert [r.status for r in results] == [Status.INVALID_URL] * len(urls)
    assert lookups == [] and connections == ["127.0.0.1"]


HOST_CHARACTERS = [*"ab.:[]%@-_09xn/\\#?", "\u00e9", "\u200b", "\uff0e", "\u3002", "\x00", " "]
HOSTILE_HOSTS = st.text(alphabet=st.sampled_from(HOST_CHARACTERS), max_size=40)
PORTS = st.sampled_from(["", ":80", ":0", ":x", ":99999"])
USER_INFO = st.sampled_from(["", "a@", "a:b@", "\u24db@", "me:p\u20acss@", "%E2%82%AC:x@", "%ff@"])


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=80),
        st.builds(
            lambda user, host, port: f"http://{user}{host}{port}/x", USER_INFO, HOSTILE_HOSTS, PORTS
        ),
    )
)
def test_any_text_is_a_checkable_url_or_invalid(text: str) -> None:
    """What the checker does with a URL before any connection: parse it, check the host
    name and the address of an IP literal. Any text ends there as ``invalid_url`` or
    passes all three; nothing else may be raised, and what passes can be sent (its user
    name and password as Basic auth, as aiohttp sends them)."""
    policy = AddressPolicy(STRICT)
    try:
        target = validate_url(text)
    except FinalStatus as final:
        assert final.status is Status.INVALID_URL
        return
    assert target.scheme in ("http", "https") and target.host
    if ":" in target.host or target.host.replace(".", "").isdigit():
        # what aiohttp connects to without resolving (helpers.is_ip_address) is exactly
        # an IP address, so the address check saw what the connection will use
        ipaddress.ip_address(target.host)
    policy.host_refusal(target.host)
    auth = aiohttp.BasicAuth.from_url(target)
    if auth is not None:
        auth.encode()


# -- the per-URL deadline ------------------------------------------------------------------


def test_the_url_deadline_has_a_documented_default_and_must_be_positive() -> None:
    assert CheckConfig().url_deadline == 120.0 == 2 * CheckConfig().total_timeout
    for bad in (0, -1, float("nan")):
        with pytest.raises(ConfigError, match=r"^url_deadline: must be a positive number"):
            CheckConfig(url_deadline=bad)


def test_a_retry_after_that_would_pass_the_deadline_ends_at_once(
    server: LoopbackServer,
) -> None:
    config = CheckConfig(allowed_networks=("127.0.0.0/8",), retries=3, url_deadline=1)
    hits = server.hits["/busy.jpg"]
    [result] = check_urls([server.url("/busy.jpg")], config)
    assert server.hits["/busy.jpg"] == hits + 1  # no second attempt after the wait
    assert (result.status, result.http_status, result.attempts) == (Status.TIMEOUT, 429, 1)
    assert result.detail.startswith("per-URL deadline of 1s reached after 1 attempt(s)")
    assert "Retry-After wait of 2s would pass it" in result.detail


@pytest.mark.slow
def test_a_trickling_host_is_cut_off_at_the_url_deadline(server: LoopbackServer) -> None:
    """One byte a second: the read timeout never fires, the total timeout does on each of
    the three attempts (3 x 3 s and the backoff without a deadline)."""
    config = CheckConfig(
        allowed_networks=("127.0.0.0/8",),
        retries=2,
        backoff=0.05,
        read_timeout=2,
        total_timeout=3,
        url_deadline=3,
    )
    hits = server.hits["/trickle.jpg"]
    [result] = check_urls([server.url("/trickle.jpg")], config)
    assert result.status is Status.TIMEOUT
    assert result.detail.startswith("per-URL deadline of 3s reached after 1 attempt(s)")
    assert server.hits["/trickle.jpg"] == hits + 1 == hits + result.attempts


@pytest.mark.slow
def test_the_deadline_spans_retries(server: LoopbackServer) -> None:
    config = CheckConfig(
        allowed_networks=("127.0.0.0/8",),
        retries=5,
        backoff=0.05,
        read_timeout=2,
        total_timeout=1.5,
        url_deadline=4,
    )
    hits = server.hits["/trickle.jpg"]
    [result] = check_urls([server.url("/trickle.jpg")], config)
    assert result.status is Status.TIMEOUT and result.attempts == 3
    assert "per-URL deadline of 4s reached after 3 attempt(s)" in result.detail
    assert "(last: no complete response within 1.5s)" in result.detail
    assert server.hits["/trickle.jpg"] == hits + 3  # 5 retries allowed: the deadline ended it


# -- EXIF orientation ----------------------------------------------------------------------


@pytest.mark.filterwarnings("error")  # nor does it print Pillow's warning
def test_a_broken_exif_block_does_not_reject_the_image() -> None:
    out = io.BytesIO()
    CHELSEA.save(out, "JPEG", exif=b"Exif\x00\x00MM\x00*\x00\x00\x00\x08\xff\xff garbage")
    info = inspect_image(out.getvalue())
    assert (info.width, info.height) == (451, 300)


def test_the_checker_reports_the_shown_size_of_an_exif_rotated_image(tmp_path: Path) -> None:
    routes = {"/upright.jpg": static(JPEG), "/tagged.jpg": static(exif_rotated_jpeg(CHELSEA))}
    with LoopbackServer(routes) as running:
        config = CheckConfig(allowed_networks=("127.0.0.0/8",), limits=ImageLimits(min_side=8))
        upright, tagged = check_urls([running.url(p) for p in routes], config)
    assert (tagged.width, tagged.height) == (upright.width, upright.height) == (451, 300)
    assert tagged.phash is not None and upright.phash is not None
    assert phash_distance(tagged.phash, upright.phash) <= 4


def test_the_evaluator_decodes_exif_rotated_images_upright(tmp_path: Path) -> None:
    import numpy as np

    from contrastkit.evaluators.data import EvalItem, ImageLoader
    from contrastkit.schema import Gender
    from factories import make_row

    (tmp_path / "tagged.jpg").write_bytes(exif_rotated_jpeg(CHELSEA))
    (tmp_path / "upright.jpg").write_bytes(JPEG)
    loader = ImageLoader()
    opened = {}
    for name in ("tagged.jpg", "upright.jpg"):
        row = make_row("doctor", Gender.MASCULINE, url=name)
        opened[name] = loader.open(EvalItem(row=row, source=tmp_path, image_ref=name))
    tagged, upright = opened["tagged.jpg"], opened["upright.jpg"]
    assert tagged.size == upright.size == (451, 300) and tagged.mode == "RGB"
    difference = np.abs(np.asarray(tagged, dtype=int) - np.asarray(upright, dtype=int))
    assert difference.mean() < 8  # the same picture, up to JPEG noise
