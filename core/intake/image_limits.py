"""What an image must be before anything decodes it: a PNG, JPEG or WebP within a byte size and a
pixel count, both checked from the bytes' header alone (decompression bombs).

A 40 KB PNG can declare 30,000 × 30,000 pixels and decode to 3.6 GB; Pillow's `Image.open` reads only
the header (IHDR, SOF, VP8 frame header), so the dimensions are known and refused before any decoder
allocates. Only these three formats go on to the OCR engine: Tesseract treats input it cannot decode as
a list of file names or URLs to open (its libcurl reads URLs), so a text "image" must never reach it.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

# Pillow's format names of what tipline reads (PNG, JPEG, WebP): screenshots and chat photos.
FORMATS = ("PNG", "JPEG", "WEBP")
MIME_TYPES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/jpg": "JPEG", "image/webp": "WEBP"}


class ImageRefused(ValueError):
    """An image tipline will not read; `key` names the sentence in core/i18n.py, `values` fill it."""

    key = "image.not_image"

    def __init__(self, detail: str = "", **values: object):
        super().__init__(detail or self.key)
        self.values = values


class NotAnImage(ImageRefused):
    key = "image.not_image"


class ImageTooLarge(ImageRefused):
    """More bytes than the limit (the sentence names the limit in MB)."""

    key = "image.too_large"


class TooManyPixels(ImageRefused):
    key = "image.too_many_pixels"


@dataclass(frozen=True)
class ImageLimits:
    max_bytes: int = 10 * 1024 * 1024
    max_pixels: int = 25_000_000

    def refuse_size(self, size: int | None) -> None:
        """Raise `ImageTooLarge` when a size (known before downloading, or counted after) is over the cap."""
        if size is not None and size > self.max_bytes:
            raise ImageTooLarge(f"{size} bytes > {self.max_bytes}", mb=_mb(self.max_bytes))


@dataclass(frozen=True)
class ImageInfo:
    format: str  # one of FORMATS
    width: int
    height: int


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.2g}"  # 10 MB -> "10", a test's 4 KB -> "0.0039"


def inspect_image(data: bytes, limits: ImageLimits) -> ImageInfo:
    """The format and dimensions read from the header; raises an `ImageRefused` for anything else.
    Never decodes pixel data (cheap: ~0.1 ms), but call it off the event loop all the same."""
    limits.refuse_size(len(data))
    if not data:
        raise NotAnImage("empty")
    # Imported here: every app builds an image reader, and Pillow costs ~0.03 s of a text-only `tipline
    # check`'s CPU.
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            # Pillow warns above its own 89 MP default; our cap below decides, not the warning.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=FORMATS) as im:
                width, height = im.size
                fmt = im.format or ""
    except Image.DecompressionBombError as exc:
        raise TooManyPixels(str(exc), mp=_mp(limits.max_pixels)) from exc
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise NotAnImage(str(exc)) from exc
    if fmt not in FORMATS or width <= 0 or height <= 0:
        raise NotAnImage(f"format {fmt!r} {width}x{height}")
    if width * height > limits.max_pixels:
        raise TooManyPixels(f"{width}x{height}", mp=_mp(limits.max_pixels))
    return ImageInfo(fmt, width, height)


def _mp(pixels: int) -> str:
    return f"{pixels / 1e6:g}"


def mime_is_image(mime: str | None) -> bool:
    """Whether a platform's declared MIME type is one we read (None/empty: unknown, look at the bytes)."""
    return not mime or mime.split(";")[0].strip().lower() in MIME_TYPES
