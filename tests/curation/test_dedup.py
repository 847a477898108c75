"""URL canonicalisation and duplicate grouping (contrastkit.curation.dedup)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contrastkit.curation.dedup import (
    DuplicateGroup,
    _popcount,
    canonical_url,
    find_content_duplicates,
    find_duplicates,
)

PEXELS = "https://images.pexels.com/photos/7092361/pexels-photo-7092361.jpeg"
PEXELS_OTHER = "https://images.pexels.com/photos/7092583/pexels-photo-7092583.jpeg"
GOOGLE = "https://encrypted-tbn0.gstatic.com/images"
FLICKR = "https://live.staticflickr.com/65535/51234567890_a1b2c3d4e5"
WP = "https://example.com/wp-content/uploads/2021/03/photo"

SAME_IMAGE = [
    pytest.param(
        f"{PEXELS}?auto=compress&cs=tinysrgb&w=600&lazy=load",
        f"{PEXELS}?auto=compress&cs=tinysrgb&dpr=2&h=750&w=1260",
        id="pexels-size-params",
    ),
    pytest.param(f"{PEXELS}?auto=compress&cs=tinysrgb&dpr=1&w=500", PEXELS, id="pexels-vs-bare"),
    pytest.param("http://example.com/a.jpg", "https://example.com/a.jpg", id="http-vs-https"),
    pytest.param("https://www.example.com/a.jpg", "https://example.com/a.jpg", id="www"),
    pytest.param("https://example.com:443/a.jpg", "https://example.com/a.jpg", id="port-443"),
    pytest.param("http://example.com:80/a.jpg", "https://example.com/a.jpg", id="port-80"),
    pytest.param("HTTPS://WWW.Example.COM/a.jpg", "https://example.com/a.jpg", id="host-case"),
    pytest.param("https://example.com/a.jpg#top", "https://example.com/a.jpg", id="fragment"),
    pytest.param(
        "https://example.com/img?id=3&page=2",
        "https://example.com/img?page=2&id=3",
        id="query-order",
    ),
    pytest.param(
        "https://example.com/a.jpg?utm_source=feed&utm_medium=rss&UTM_campaign=x",
        "https://example.com/a.jpg",
        id="utm",
    ),
    pytest.param(f"{GOOGLE}?q=tbn:ANd9GcQ1&usqp=CAU", f"{GOOGLE}?q=tbn:ANd9GcQ1", id="google-usqp"),
    pytest.param(f"{WP}-1024x575.jpg", f"{WP}.jpg", id="wordpress-size"),
    pytest.param(f"{WP}-scaled.jpg", f"{WP}.jpg", id="wordpress-scaled"),
    pytest.param(f"{WP}-300x200.jpg", f"{WP}-scaled.jpg", id="wordpress-size-vs-scaled"),
    pytest.param(
        "https://i0.wp.com/example.com/wp-content/uploads/2021/03/photo.jpg",
        "https://example.com/wp-content/uploads/2021/03/photo.jpg",
        id="jetpack-proxy",
    ),
    pytest.param(
        "https://i2.wp.com/www.Example.com/wp-content/uploads/2021/03/photo-1024x575.jpg",
        "https://example.com/wp-content/uploads/2021/03/photo.jpg",
        id="jetpack-proxy-www-and-size",
    ),
    pytest.param(f"{FLICKR}_b.jpg", f"{FLICKR}_z.jpg", id="flickr-b-vs-z"),
    pytest.param(f"{FLICKR}_b.jpg", f"{FLICKR}.jpg", id="flickr-b-vs-bare"),
    pytest.param(f"  {PEXELS}?w=600\t", PEXELS, id="surrounding-space"),
]

DIFFERENT_IMAGES = [
    # size-suffix rules apply only on hosts known to use them
    pytest.param(
        "https://example.com/2020_01_b.jpg", "https://example.com/2020_01_c.jpg", id="not-flickr"
    ),
    pytest.param(
        "https://example.com/maps/city-1024x575.png",
        "https://example.com/maps/city.png",
        id="not-wordpress",
    ),
    pytest.param(f"{PEXELS}?w=600", f"{PEXELS_OTHER}?w=600", id="pexels-photo-ids"),
    pytest.param(
        f"{GOOGLE}?q=tbn:AAA&usqp=CAU", f"{GOOGLE}?q=tbn:BBB&usqp=CAU", id="google-thumbnail-q"
    ),
    pytest.param("https://example.com:8443/a.jpg", "https://example.com/a.jpg", id="custom-port"),
    pytest.param(
        "https://example.com/img?id=1", "https://example.com/img?id=2", id="identity-param"
    ),
    pytest.param(
        f"{FLICKR}_b.jpg",
        "https://live.staticflickr.com/65535/51234567891_a1b2c3d4e5_b.jpg",
        id="flickr-photo-ids",
    ),
    pytest.param("https://example.com/a.jpg", "https://example.org/a.jpg", id="hosts"),
    pytest.param("https://example.com/a.jpg", "https://example.com/b.jpg", id="paths"),
]


@pytest.mark.parametrize(("first", "second"), SAME_IMAGE)
def test_renditions_of_one_image_share_a_key(first: str, second: str) -> None:
    assert canonical_url(first) == canonical_url(second)


@pytest.mark.parametrize(("first", "second"), DIFFERENT_IMAGES)
def test_different_images_keep_different_keys(first: str, second: str) -> None:
    assert canonical_url(first) != canonical_url(second)


@pytest.mark.parametrize(
    ("url", "key"),
    [
        pytest.param(
            f"{PEXELS}?auto=compress&cs=tinysrgb&w=600&lazy=load",
            "images.pexels.com/photos/7092361/pexels-photo-7092361.jpeg",
            id="pexels",
        ),
        pytest.param(
            "http://Example.com:8080/a.jpg#x", "example.com:8080/a.jpg", id="custom-port-kept"
        ),
        pytest.param(
            "https://example.com/img?page=2&utm_source=x&id=3",
            "example.com/img?id=3&page=2",
            id="query-sorted",
        ),
        pytest.param(
            "https://i0.wp.com/example.com/wp-content/uploads/photo-1024x575.jpg?resize=1024%2C575",
            "example.com/wp-content/uploads/photo.jpg",
            id="jetpack",
        ),
        pytest.param(f"{FLICKR}_z.jpg", f"{FLICKR.removeprefix('https://')}.jpg", id="flickr"),
    ],
)
def test_canonical_key_form(url: str, key: str) -> None:
    assert canonical_url(url) == key


def test_jetpack_proxy_url_as_jetpack_emits_it_matches_the_original() -> None:
    """Jetpack's image CDN writes ``?ssl=1`` on every proxied https image (e.g. photon.js:
    ``photon('https://wordpress.org/style/images/wporg-logo.svg')`` gives
    ``https://i1.wp.com/wordpress.org/style/images/wporg-logo.svg?ssl=1``). The flag says how
    the proxy fetches the original, not which image it serves."""
    proxied = "https://i1.wp.com/wordpress.org/style/images/wporg-logo.svg?ssl=1"
    assert canonical_url(proxied) == canonical_url(
        "https://wordpress.org/style/images/wporg-logo.svg"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("  not a url  ", "not a url"),
        ("", ""),
        ("ftp://Example.com/a.jpg?w=600", "ftp://Example.com/a.jpg?w=600"),
        ("  data:image/png;base64,AAAA\n", "data:image/png;base64,AAAA"),
        ("mailto:someone@example.com", "mailto:someone@example.com"),
        ("https://", "https://"),
        ("http://[::1/a.jpg?w=600", "http://[::1/a.jpg?w=600"),
        ("images.pexels.com/photos/1/x.jpeg?w=600", "images.pexels.com/photos/1/x.jpeg?w=600"),
    ],
)
def test_non_urls_and_other_schemes_are_only_stripped(value: str, expected: str) -> None:
    assert canonical_url(value) == expected


# find_duplicates


def test_exact_duplicates_are_grouped_in_input_order() -> None:
    items = [("r1", PEXELS), ("r2", PEXELS_OTHER), ("r3", PEXELS), ("r4", "https://x.org/a.jpg")]
    assert find_duplicates(items) == [DuplicateGroup("exact", PEXELS, ("r1", "r3"))]


def test_canonical_group_needs_two_distinct_urls() -> None:
    small = f"{PEXELS}?w=600"
    large = f"{PEXELS}?w=1260&h=750"
    groups = find_duplicates([("z", small), ("a", PEXELS_OTHER), ("m", large)])
    assert groups == [DuplicateGroup("canonical", canonical_url(small), ("z", "m"))]


def test_same_url_twice_is_only_an_exact_duplicate() -> None:
    groups = find_duplicates([("a", PEXELS), ("b", PEXELS)])
    assert [g.kind for g in groups] == ["exact"]


def test_exact_pair_and_a_variant_give_both_groups() -> None:
    variant = f"{PEXELS}?dpr=2"
    groups = find_duplicates([("c", PEXELS), ("b", variant), ("a", PEXELS)])
    assert groups == [
        DuplicateGroup("exact", PEXELS, ("c", "a")),
        DuplicateGroup("canonical", canonical_url(PEXELS), ("c", "b", "a")),
    ]


def test_canonical_false_disables_canonical_grouping() -> None:
    items = [("a", f"{PEXELS}?w=600"), ("b", f"{PEXELS}?w=1260"), ("c", PEXELS_OTHER)]
    assert len(find_duplicates(items)) == 1
    assert find_duplicates(items, canonical=False) == []
    with_exact = [*items, ("d", PEXELS_OTHER)]
    assert find_duplicates(with_exact, canonical=False) == [
        DuplicateGroup("exact", PEXELS_OTHER, ("c", "d"))
    ]


def test_whitespace_around_urls_is_ignored_for_exact_matching() -> None:
    groups = find_duplicates([("a", f"  {PEXELS}"), ("b", f"{PEXELS}\t\r\n"), ("c", PEXELS)])
    assert groups == [DuplicateGroup("exact", PEXELS, ("a", "b", "c"))]


def test_no_duplicates_no_groups() -> None:
    assert find_duplicates([("a", PEXELS), ("b", PEXELS_OTHER)]) == []
    assert find_duplicates([]) == []


# property: pexels renditions

_SIZE_PARAMS = ("w", "h", "dpr", "auto", "cs", "lazy", "fit")
_param_lists = st.lists(
    st.tuples(st.sampled_from(_SIZE_PARAMS), st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True)),
    unique_by=lambda pair: pair[0],
    max_size=len(_SIZE_PARAMS),
)
_photo_ids = st.integers(min_value=1, max_value=10**10)
_schemes = st.sampled_from(["http", "https"])


def _pexels(scheme: str, photo_id: int, params: list[tuple[str, str]]) -> str:
    url = f"{scheme}://images.pexels.com/photos/{photo_id}/pexels-photo-{photo_id}.jpeg"
    if params:
        url += "?" + "&".join(f"{key}={value}" for key, value in params)
    return url


@pytest.mark.slow
@settings(deadline=None, max_examples=100)
@given(_photo_ids, _param_lists, _param_lists, _schemes, _schemes)
def test_any_sizes_of_one_pexels_photo_share_a_key(
    photo_id: int,
    first: list[tuple[str, str]],
    second: list[tuple[str, str]],
    scheme_a: str,
    scheme_b: str,
) -> None:
    key = canonical_url(_pexels(scheme_a, photo_id, first))
    assert key == canonical_url(_pexels(scheme_b, photo_id, second))
    assert key == f"images.pexels.com/photos/{photo_id}/pexels-photo-{photo_id}.jpeg"


@pytest.mark.slow
@settings(deadline=None, max_examples=100)
@given(_photo_ids, _photo_ids, _param_lists, _param_lists)
def test_different_pexels_photos_never_share_a_key(
    id_a: int, id_b: int, first: list[tuple[str, str]], second: list[tuple[str, str]]
) -> None:
    same = canonical_url(_pexels("https", id_a, first)) == canonical_url(
        _pexels("https", id_b, second)
    )
    assert same == (id_a == id_b)


# -- content duplicates -----------------------------------------------------------------


def test_same_bytes_group_rows_across_files() -> None:
    sha_a, sha_b = "a" * 64, "b" * 64
    groups = find_content_duplicates(
        [("OP_1", sha_a, "ff00ff00ff00ff00"), ("OO_7", sha_a, "ff00ff00ff00ff00"),
         ("OP_2", sha_b, "0123456789abcdef")]
    )  # fmt: skip
    assert groups == [DuplicateGroup("same_bytes", sha_a, ("OP_1", "OO_7"))]


def test_near_duplicates_link_through_chains_within_the_threshold() -> None:
    base = 0x0F0F_0F0F_0F0F_0F0F
    near = base ^ 0b1111  # 4 bits away
    chained = near ^ (0b1111 << 8)  # 4 more bits away: 8 from base, still linked through near
    far = base ^ ((1 << 40) - 1)  # 40 bits away
    groups = find_content_duplicates(
        [("r1", "1" * 64, f"{base:016x}"), ("r2", "2" * 64, f"{near:016x}"),
         ("r3", "3" * 64, f"{far:016x}"), ("r4", "4" * 64, f"{chained:016x}")],
        max_distance=4,
    )  # fmt: skip
    assert [(g.kind, g.items) for g in groups] == [("near_duplicate", ("r1", "r2", "r4"))]
    pair = [("r1", "1" * 64, f"{base:016x}"), ("r2", "2" * 64, f"{near:016x}")]
    assert find_content_duplicates(pair, max_distance=3) == []
    assert find_content_duplicates(pair, max_distance=-1) == []


def test_same_bytes_items_are_listed_once_in_their_near_group() -> None:
    groups = find_content_duplicates(
        [("a", "1" * 64, "0000000000000000"), ("b", "1" * 64, "0000000000000000"),
         ("c", "2" * 64, "0000000000000001")]
    )  # fmt: skip
    assert [(g.kind, g.items) for g in groups] == [
        ("same_bytes", ("a", "b")),
        ("near_duplicate", ("a", "b", "c")),
    ]


def test_popcount_without_numpy_bitwise_count(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.array([0, 1, 0xFFFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0001], dtype=np.uint64)
    expected = [0, 1, 64, 2]
    assert _popcount(values).tolist() == expected
    monkeypatch.delattr(np, "bitwise_count", raising=False)
    assert _popcount(values).tolist() == expected


@pytest.mark.parametrize("orientation", range(2, 9))
def test_an_exif_oriented_jpeg_and_its_upright_twin_are_near_duplicates(orientation: int) -> None:
    """A camera stores a photo sideways with an EXIF Orientation tag; the same picture
    saved upright (an edited copy, another site's rendition) is the same image: same
    reported size, neighbouring perceptual hashes, one near-duplicate group."""
    from PIL import ExifTags, Image
    from skimage import data as skdata

    from contrastkit.curation.images import inspect_image, phash_distance
    from loopback import exif_rotated_jpeg, jpeg_bytes

    upright_image = Image.fromarray(skdata.chelsea())  # 451 x 300
    tagged_bytes = exif_rotated_jpeg(upright_image, orientation)
    with Image.open(io.BytesIO(tagged_bytes)) as stored:
        assert stored.getexif()[ExifTags.Base.Orientation] == orientation
        assert stored.size == ((300, 451) if orientation >= 5 else (451, 300))
    tagged, upright = inspect_image(tagged_bytes), inspect_image(jpeg_bytes(upright_image))
    assert (tagged.width, tagged.height) == (upright.width, upright.height) == (451, 300)
    assert tagged.sha256 != upright.sha256
    assert phash_distance(tagged.phash, upright.phash) <= 4
    groups = find_content_duplicates(
        [("OO_1", upright.sha256, upright.phash), ("OO_2", tagged.sha256, tagged.phash)]
    )
    assert [(g.kind, g.items) for g in groups] == [("near_duplicate", ("OO_1", "OO_2"))]
