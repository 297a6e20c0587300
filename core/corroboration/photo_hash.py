"""The perceptual hash of a photo: the same picture re-encoded or resized gets a hash a few bits away; another
picture about half the bits away.

The hash is imagehash's pHash at 256 bits (the signs of the lowest 16x16 DCT coefficients of a 64x64 grey
thumbnail against their median). Two photos are the same when their hashes differ in at most
`MATCH_DISTANCE` bits, measured on generated pictures and their variants
(docs/decisions/2026-11-29-photo-hash.md): 64-bit pHash could not tell two news cards of one
template (same background, band and logo, another headline) apart, 256 bits can. Before anything decodes
the bytes, core/intake/image_limits.py checks the format and the pixel count from the header, so a decompression
bomb is refused unread; a JPEG is then decoded at a reduced scale (the hash reads a 64x64 thumbnail, so a
full-size decode is wasted).

Hashes are Python ints of up to 256 bits; SQLite keeps them as 64 hex digits (storage/sqlite.py).
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence

import numpy as np

from core.intake.image_limits import FORMATS, ImageLimits, NotAnImage, inspect_image

HASH_SIZE = 16  # imagehash's hash_size: HASH_SIZE**2 bits
BITS = HASH_SIZE * HASH_SIZE
WORDS = BITS // 64
# At most this many differing bits is the same photo: re-encodings and resizes fall within it, two news cards
# of one template do not, and neither do crops (docs/decisions/2026-11-29-photo-hash.md).
MATCH_DISTANCE = 12
_THUMB = 4 * HASH_SIZE * 2  # a JPEG is decoded at the smallest DCT scale still at least this big


def photo_hash(data: bytes, limits: ImageLimits | None = None) -> int:
    """The pHash of an image's bytes. Raises an `ImageRefused` subclass for what is not a PNG, JPEG or WebP
    within `limits`, or cannot be decoded. CPU work (~2 ms here): call it off the event loop."""
    inspect_image(data, limits or ImageLimits())
    import imagehash  # imported here: only processes that hash photos pay for scipy
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # inspect_image enforced our cap
            with Image.open(io.BytesIO(data), formats=FORMATS) as img:
                img.draft("RGB", (_THUMB, _THUMB))
                value = imagehash.phash(img, hash_size=HASH_SIZE)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise NotAnImage(f"undecodable: {exc}") from exc
    bits = np.asarray(value.hash, dtype=bool).ravel()
    return int.from_bytes(np.packbits(bits).tobytes(), "big")


def distance(a: int, b: int) -> int:
    """Bits that differ between two hashes."""
    return (a ^ b).bit_count()


def same_photo(a: int, b: int, max_distance: int = MATCH_DISTANCE) -> bool:
    return distance(a, b) <= max_distance


def words(h: int) -> np.ndarray:
    """A hash as WORDS unsigned 64-bit words, for vectorised distances."""
    return np.frombuffer(h.to_bytes(BITS // 8, "big"), dtype=">u8").astype(np.uint64)


def distances(query: int, table: np.ndarray) -> np.ndarray:
    """The distance from `query` to each row of `table` (n x WORDS words): 100,000 rows in a few ms."""
    if not len(table):
        return np.zeros(0, dtype=np.int64)
    return np.bitwise_count(table ^ words(query)).sum(axis=1, dtype=np.int64)


def nearest(query: int, hashes: Sequence[int], max_distance: int = MATCH_DISTANCE) -> list[tuple[int, int]]:
    """(index, distance) of the hashes within `max_distance` of `query`, nearest first."""
    if not hashes:
        return []
    d = distances(query, np.stack([words(h) for h in hashes]))
    return sorted(((int(i), int(d[i])) for i in np.flatnonzero(d <= max_distance)), key=lambda x: x[1])
