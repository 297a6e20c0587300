"""Screenshots: an image attached to a message is downloaded from its platform, its text read by the OCR
engine (core/intake/ocr.py), and that text checked with the caption, like any message.

    adapter: photo / image file -> ImageRef on the IncomingMessage -> route() -> CheckRequest.image
    worker:  ImageReader.read(ref) -> the platform's ImageFetcher downloads (capped) -> OCR -> text

The request carries only a reference (a Telegram file_id, a Slack file id), so the durable queue stores
a few bytes, and the download happens in the worker, after the platform was acknowledged. Whatever
goes wrong is one `ImageRefused` with a sentence in the user's language (`refusal_text`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from core.i18n import t
from core.intake.image_limits import ImageLimits, ImageRefused, NotAnImage, inspect_image, mime_is_image
from core.intake.ocr import OcrEngine, OcrText, OcrUnavailable

from bot.requests import ImageRef

if TYPE_CHECKING:
    from bot.settings import Settings

log = logging.getLogger(__name__)


class DownloadFailed(ImageRefused):
    key = "image.download_failed"


class FileUnreadable(ImageRefused):
    key = "image.file_unreadable"


class NoTextInImage(ImageRefused):
    """The image was read and holds no text, and there is no caption: nothing to check."""

    key = "image.no_text"


class ImageFetcher(Protocol):
    """Per platform: the bytes of an image it sent us, at most `max_bytes` of them (raise
    `ImageTooLarge` past that, `DownloadFailed` when the platform will not give it)."""

    async def fetch(self, ref: ImageRef, max_bytes: int) -> bytes: ...


@dataclass(frozen=True)
class ImageReading:
    text: str  # what the OCR read, whitespace tidied ("" when the image has no text)
    ocr: OcrText


_SPACES = re.compile(r"[ \t\u00a0]+")
_BLANKS = re.compile(r"\n\s*\n+")


def _not_noise(word: str) -> bool:
    # An avatar or an icon comes back as a "word" of symbols only ("©®" for a round avatar on the post
    # renders of evals/bench_ocr.py); it would be quoted on the card and checked.
    return not all(unicodedata.category(c) in ("So", "Sk", "Co") for c in word)


_TIME = re.compile(r"\b\d{1,2}:\d{2}\b")
_LETTERS = re.compile(r"[^\W\d_]{3,}")
_SENTENCE_END = re.compile(r"[.!?…:]")


def _chrome(lines: list[str]) -> list[str]:
    """A post screenshot's frame, which no fact-check holds and which pulled the Russian 5G post away from its
    match: the counters line (views and a time: "👁 15.2K 12:41", "015.2К 12:41") and the channel's or
    author's name heading the post ("Труха⚡️Украина", "Daily News @daily · 2h": three words at most, no
    sentence punctuation, with the post's lines below it: four words of three letters or more)."""
    lines = [x for x in lines if not (_TIME.search(x) and len(_LETTERS.findall(x)) <= 1)]
    text = [x for x in lines if x.strip()]
    if len(text) >= 2 and len(_LETTERS.findall(text[0])) <= 3 and not _SENTENCE_END.search(text[0]) \
            and sum(len(_LETTERS.findall(x)) for x in text[1:]) >= 4:
        lines = lines[lines.index(text[0]) + 1:]
    return lines


def tidy(text: str) -> str:
    """Tesseract's output: form feeds, symbol-only words (icons), a post's frame (`_chrome`), runs of spaces and
    blank lines gone, lines kept."""
    text = text.replace("\f", "\n")
    lines = [" ".join(w for w in _SPACES.sub(" ", line).split(" ") if w and _not_noise(w))
             for line in text.splitlines()]
    return _BLANKS.sub("\n\n", "\n".join(_chrome(lines))).strip()


def combine(caption: str, image_text: str) -> str:
    """What is checked: the caption, then the text read from the image."""
    return "\n\n".join(x for x in (caption.strip(), image_text.strip()) if x)


@dataclass
class ImageReader:
    """Downloads (through each platform's fetcher) and reads images; built once by build_app."""

    ocr: OcrEngine
    limits: ImageLimits
    fetchers: dict[str, ImageFetcher] = field(default_factory=dict)

    def register(self, platform: str, fetcher: ImageFetcher) -> None:
        self.fetchers[platform] = fetcher

    async def read(self, ref: ImageRef) -> ImageReading:
        """The text of the image `ref` points to; raises `ImageRefused` (with its sentence)."""
        if not mime_is_image(ref.mime):
            raise NotAnImage(f"declared {ref.mime!r}")
        self.limits.refuse_size(ref.size)
        if not await self.ocr.available():
            raise OcrUnavailable("no OCR engine")  # before downloading what nobody can read
        return await self.read_bytes(await self.fetch(ref))

    async def fetch(self, ref: ImageRef) -> bytes:
        """The bytes of the image `ref` points to, within the byte cap; raises `ImageRefused`."""
        if not mime_is_image(ref.mime):
            raise NotAnImage(f"declared {ref.mime!r}")
        self.limits.refuse_size(ref.size)
        fetcher = self.fetchers.get(ref.platform)
        if fetcher is None:
            raise DownloadFailed(f"no image fetcher for {ref.platform!r}")
        try:
            data = await fetcher.fetch(ref, self.limits.max_bytes)
        except ImageRefused:
            raise
        except Exception as exc:
            log.warning("could not download image %s from %s", ref.file_id, ref.platform, exc_info=True)
            raise DownloadFailed(repr(exc)) from exc
        self.limits.refuse_size(len(data))
        return data

    async def read_bytes(self, data: bytes) -> ImageReading:
        ocr = await self.ocr.read(data)
        return ImageReading(tidy(ocr.text), ocr)


async def read_image_file(path: Path, settings: Settings) -> bytes:
    """An image file from disk (`tipline check --image`), its size and header checked before anything
    decodes it; raises `ImageRefused` (`DownloadFailed` when it cannot be read at all)."""
    limits = ImageLimits(max_bytes=settings.ocr_max_bytes, max_pixels=settings.ocr_max_pixels)

    def load() -> bytes:
        try:
            with path.open("rb") as f:
                limits.refuse_size(os.fstat(f.fileno()).st_size)
                data = f.read(limits.max_bytes + 1)  # a file that grows meanwhile is still capped
        except OSError as exc:
            raise FileUnreadable(f"{path}: {exc.strerror or exc}", path=str(path)) from exc
        inspect_image(data, limits)
        return data

    return await asyncio.to_thread(load)


def refusal_text(exc: ImageRefused, language: str = "en") -> str:
    """The one sentence a user gets for an image tipline could not read."""
    return t(exc.key, language, **exc.values)
