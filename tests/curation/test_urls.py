"""The URL checker against a real HTTP server on 127.0.0.1 that misbehaves like real hosts."""

from __future__ import annotations

import socket
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image
from skimage import data as skdata

from contrastkit.curation.images import ImageLimits, phash_distance
from contrastkit.curation.urls import CheckConfig, Status, URLCheck, check_urls, redact_url
from contrastkit.store import ImageStore
from loopback import (
    LoopbackServer,
    delayed,
    encode,
    endless_body,
    hang_after_headers,
    jpeg_bytes,
    redirect,
    sequence,
    static,
)

ASTRONAUT = Image.fromarray(skdata.astronaut())
COFFEE = Image.fromarray(skdata.coffee())
CHELSEA = Image.fromarray(skdata.chelsea())

JPEG = jpeg_bytes(ASTRONAUT)
PNG = encode(COFFEE, "PNG")
WEBP = encode(CHELSEA, "WEBP", quality=80)
RESIZED = jpeg_bytes(ASTRONAUT.resize((256, 256)), quality=60)


def png_bomb(width: int = 100_000, height: int = 100_000) -> bytes:
    """A 1-bit PNG header claiming width x height, with one tiny compressed row."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        body = kind + payload
        return struct.pack(">I", len(payload)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    idat = zlib.compress(b"\x00" * (width // 8 + 1))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


ROUTES = {
    "/photo.jpg": static(JPEG),
    "/photo.png": static(PNG, "image/png"),
    "/photo.webp": static(WEBP, "image/webp"),
    "/same-photo-elsewhere.jpg": static(JPEG),
    "/photo-small-copy.jpg": static(RESIZED),
    "/slow.jpg": delayed(5, static(JPEG)),
    "/hangs.jpg": hang_after_headers,
    "/flaky.jpg": sequence(static(b"oops", "text/plain", 500), static(JPEG)),
    "/gone.jpg": static(b"not here", "text/plain", 404),
    "/busy.jpg": sequence(
        static(b"slow down", "text/plain", 429, {"Retry-After": "1"}), static(PNG, "image/png")
    ),
    "/busy-for-an-hour.jpg": static(b"no", "text/plain", 429, {"Retry-After": "3600"}),
    "/loop/a": redirect("/loop/b"),
    "/loop/b": redirect("/loop/a"),
    "/hop.jpg": redirect("/photo.jpg", 301),
    "/to-metadata": redirect("http://169.254.169.254/latest/meta-data/"),
    "/to-private": redirect("http://10.1.2.3/photo.jpg"),
    "/to-ftp": redirect("ftp://example.org/photo.jpg"),
    "/page.html": static(b"<!DOCTYPE html><html><body>hi</body></html>", "text/html"),
    "/truncated.jpg": static(JPEG[: len(JPEG) // 2]),
    "/endless.jpg": endless_body,
    "/bomb.png": static(png_bomb(), "image/png"),
    "/big-canvas.png": static(png_bomb(10_000, 10_000), "image/png"),
    "/tiny.png": static(encode(Image.new("RGB", (8, 8), "red"), "PNG"), "image/png"),
    "/noai.jpg": static(JPEG, headers={"X-Robots-Tag": "noindex, noai"}),
    "/noimageai.jpg": static(JPEG, headers={"X-Robots-Tag": "otherbot: noimageai"}),
}

FAST = CheckConfig(
    allowed_networks=("127.0.0.0/8",),
    connect_timeout=2,
    read_timeout=1,
    total_timeout=3,
    retries=2,
    backoff=0.05,
    max_redirects=3,
    limits=ImageLimits(max_bytes=2_000_000),
    user_agent="contrastkit-test/1.0",
)


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(ROUTES) as running:
        yield running


@pytest.fixture(scope="module")
def results(server: LoopbackServer) -> dict[str, URLCheck]:
    urls = [server.url(path) for path in ROUTES]
    checked = check_urls(urls, FAST)
    # Everything runs concurrently: the server saw several requests at once (how long
    # that takes is bench/urls.py's business, not a test's).
    assert server.most_in_flight > 1
    assert [r.url for r in checked] == urls
    return {r.url.split(str(server.port), 1)[1]: r for r in checked}


@pytest.mark.parametrize(
    ("path", "fmt", "size"),
    [("/photo.jpg", "JPEG", (512, 512)), ("/photo.png", "PNG", (600, 400)),
     ("/photo.webp", "WEBP", (451, 300))],
)  # fmt: skip
def test_valid_images_are_ok_with_their_fingerprint(
    results: dict[str, URLCheck], path: str, fmt: str, size: tuple[int, int]
) -> None:
    result = results[path]
    assert result.status is Status.OK, result.detail
    assert (result.format, (result.width, result.height)) == (fmt, size)
    assert result.sha256 is not None and len(result.sha256) == 64
    assert result.phash is not None and len(result.phash) == 16
    assert result.attempts == 1 and result.http_status == 200


def test_a_response_slower_than_the_total_limit_times_out(results: dict[str, URLCheck]) -> None:
    result = results["/slow.jpg"]
    assert result.status is Status.TIMEOUT
    assert result.attempts == 3  # timeouts are transient: retried, then recorded


def test_a_connection_that_hangs_after_the_headers_times_out(
    results: dict[str, URLCheck],
) -> None:
    result = results["/hangs.jpg"]
    assert result.status is Status.TIMEOUT
    assert "read timeout" in result.detail


def test_a_500_then_200_is_retried_and_ok(results: dict[str, URLCheck], server: LoopbackServer):
    assert results["/flaky.jpg"].status is Status.OK
    assert results["/flaky.jpg"].attempts == 2


def test_404_is_an_http_error_and_is_not_retried(results: dict[str, URLCheck]) -> None:
    result = results["/gone.jpg"]
    assert (result.status, result.http_status, result.attempts) == (Status.HTTP_ERROR, 404, 1)


def test_429_waits_for_retry_after(results: dict[str, URLCheck]) -> None:
    result = results["/busy.jpg"]
    assert result.status is Status.OK and result.attempts == 2
    # A lower bound set by the wait itself (no load can make it fail): Retry-After honoured.
    assert result.elapsed >= 1.0  # the server asked for one second


def test_a_retry_after_beyond_the_limit_ends_at_once(results: dict[str, URLCheck]) -> None:
    result = results["/busy-for-an-hour.jpg"]
    assert (result.status, result.http_status, result.attempts) == (Status.HTTP_ERROR, 429, 1)
    assert "Retry-After 3600s exceeds" in result.detail


def test_redirects(results: dict[str, URLCheck], server: LoopbackServer) -> None:
    assert results["/loop/a"].status is Status.TOO_MANY_REDIRECTS
    assert results["/hop.jpg"].status is Status.OK
    assert results["/hop.jpg"].final_url == server.url("/photo.jpg")
    assert results["/to-ftp"].status is Status.INVALID_URL


@pytest.mark.parametrize("path", ["/to-metadata", "/to-private"])
def test_a_redirect_to_a_private_address_is_blocked(
    results: dict[str, URLCheck], path: str
) -> None:
    result = results[path]
    assert result.status is Status.BLOCKED_ADDRESS
    assert "non-public address" in result.detail


@pytest.mark.parametrize(
    ("path", "status", "detail"),
    [
        ("/page.html", Status.NOT_AN_IMAGE, "HTML page"),
        ("/truncated.jpg", Status.NOT_AN_IMAGE, "does not decode"),
        ("/endless.jpg", Status.IMAGE_TOO_LARGE, "exceeds the limit of 2000000 bytes"),
        ("/bomb.png", Status.IMAGE_TOO_LARGE, "refused before decoding"),
        ("/big-canvas.png", Status.IMAGE_TOO_LARGE, "exceeds the limit of 50000000 pixels"),
        ("/tiny.png", Status.IMAGE_TOO_SMALL, "8x8"),
        ("/noai.jpg", Status.OPTED_OUT, "noai"),
        ("/noimageai.jpg", Status.OPTED_OUT, "noimageai"),
    ],
)
def test_bodies_that_are_not_usable_images(
    results: dict[str, URLCheck], path: str, status: Status, detail: str
) -> None:
    assert results[path].status is status
    assert detail in results[path].detail


def test_the_same_image_under_two_urls_has_one_sha(results: dict[str, URLCheck]) -> None:
    assert results["/photo.jpg"].sha256 == results["/same-photo-elsewhere.jpg"].sha256


def test_a_resized_reencoded_copy_is_near_in_phash_only(results: dict[str, URLCheck]) -> None:
    original, copy = results["/photo.jpg"], results["/photo-small-copy.jpg"]
    assert copy.status is Status.OK and copy.sha256 != original.sha256
    assert original.phash is not None and copy.phash is not None
    assert phash_distance(original.phash, copy.phash) <= 4
    other = results["/photo.png"].phash
    assert other is not None and phash_distance(original.phash, other) > 16


def test_the_user_agent_is_sent(results: dict[str, URLCheck], server: LoopbackServer) -> None:
    assert set(server.user_agents) == {"contrastkit-test/1.0"}


def test_every_status_of_the_list_is_covered(results: dict[str, URLCheck]) -> None:
    seen = {r.status for r in results.values()}
    # dns, connection and invalid-url cases need no server: see the tests below.
    assert seen >= set(Status) - {Status.DNS_ERROR, Status.CONNECTION_ERROR, Status.INVALID_URL}


def test_loopback_is_blocked_unless_allowed(server: LoopbackServer) -> None:
    strict = CheckConfig(connect_timeout=2, total_timeout=3)
    before = server.hits["/photo.jpg"]
    [result] = check_urls([server.url("/photo.jpg")], strict)
    assert result.status is Status.BLOCKED_ADDRESS
    [named] = check_urls([server.url("/photo.jpg", host="localhost")], strict)
    assert named.status is Status.BLOCKED_ADDRESS
    assert server.hits["/photo.jpg"] == before  # refused before connecting

    allowed = CheckConfig(allow_private=True, connect_timeout=2, total_timeout=3)
    [ok] = check_urls([server.url("/photo.jpg", host="localhost")], allowed)
    assert ok.status is Status.OK


def test_resolve_override_maps_a_name_to_the_server(server: LoopbackServer) -> None:
    config = CheckConfig(
        allowed_networks=("127.0.0.0/8",), resolve=(("images.example.org", "127.0.0.1"),)
    )
    [result] = check_urls([server.url("/photo.png", host="images.example.org")], config)
    assert result.status is Status.OK


def test_dns_connection_and_url_errors() -> None:
    with socket.socket() as probe:  # a port with nothing listening
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    urls = [
        "http://nonexistent.invalid/photo.jpg",
        f"http://127.0.0.1:{closed_port}/photo.jpg",
        "ftp://example.org/photo.jpg",
        "not a url",
        "http:///nohost.jpg",
        "",
    ]
    results = check_urls(urls, FAST)
    assert [r.status for r in results] == [
        Status.DNS_ERROR,
        Status.CONNECTION_ERROR,
        Status.INVALID_URL,
        Status.INVALID_URL,
        Status.INVALID_URL,
        Status.INVALID_URL,
    ]


def test_duplicate_urls_are_checked_once(server: LoopbackServer) -> None:
    url = server.url("/photo.webp")
    before = server.hits["/photo.webp"]
    results = check_urls([url, url, url], FAST)
    assert len(results) == 1 and server.hits["/photo.webp"] == before + 1


def test_the_store_keeps_ok_images_by_sha(server: LoopbackServer, tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "store")
    urls = [server.url(p) for p in ("/photo.jpg", "/same-photo-elsewhere.jpg", "/gone.jpg")]
    first, _, gone = check_urls(urls, FAST, store=store)
    assert first.sha256 is not None
    assert store.read(first.sha256) == JPEG
    assert store.sha_for_url(urls[0]) == store.sha_for_url(urls[1]) == first.sha256
    assert store.sha_for_url(urls[2]) is None and gone.status is Status.HTTP_ERROR
    assert len([p for p in (tmp_path / "store" / "objects").rglob("*") if p.is_file()]) == 1


def test_redact_url_hides_credentials() -> None:
    assert redact_url("https://user:pw@host.org/a.jpg?token=abc&w=600") == (
        "https://host.org/a.jpg?token=%2A%2A%2A&w=600"
    )
    assert redact_url("https://host.org/a.jpg?w=600") == "https://host.org/a.jpg?w=600"


def test_a_store_that_cannot_be_written_stops_the_run_at_once(
    server: LoopbackServer, tmp_path: Path
) -> None:
    from contrastkit.errors import ResourceError

    (tmp_path / "store").write_text("a file where the store's folder should be")
    urls = [server.url(f"/photo.jpg?copy={n}") for n in range(30)]
    config = CheckConfig(allowed_networks=("127.0.0.0/8",), concurrency=1)
    with pytest.raises(ResourceError, match="cannot write an image of the store"):
        check_urls(urls, config, store=ImageStore(tmp_path / "store"))
    fetched = sum(n for path, n in server.hits.items() if path.startswith("/photo.jpg?copy="))
    assert fetched <= 2  # not every URL was fetched before the error surfaced


def test_check_config_values_that_cannot_work_name_their_field() -> None:
    from contrastkit.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^allowed_networks: 'intranet' is not a CIDR"):
        CheckConfig(allowed_networks=("intranet",))
    with pytest.raises(ConfigError, match=r"^per_host: must be at least 1"):
        CheckConfig(per_host=0)
    assert CheckConfig(resolve=(("[::1]", "[::1]"),)).resolve == (("[::1]", "[::1]"),)
