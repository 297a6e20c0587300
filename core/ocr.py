"""Text from an image: the OCR engine Protocol and its Tesseract implementation (the `tesseract` CLI
run as an asyncio subprocess, so nothing blocks the event loop and a slow image can be killed).

Why the CLI and not a binding: the bindings on PyPI (pytesseract) run the same CLI through a temp file
and a blocking `subprocess`; tesserocr needs a compiler and the headers at install time. The CLI reads
the image on stdin and writes the text to stdout; one process per image costs ~0.1 s of start-up
(0.15 s for eng+rus+ukr here) next to ~0.3-1 s of recognition.

Before Tesseract sees a byte, core/image_limits.py has checked the format and the pixel count from the
header. Processes run at most `max_concurrent` at once, each with OMP_THREAD_LIMIT=1: on the 2-core
machine of docs/benchmarks.md Tesseract's OpenMP threads made a lone image no faster and two at once
slower (see docs/ocr.md).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from dataclasses import dataclass
from typing import Protocol

from core.image_limits import ImageLimits, ImageRefused, inspect_image

log = logging.getLogger(__name__)

MAX_TEXT_CHARS = 20_000  # a dense full-page screenshot reads to ~5,000 characters; intake caps at 4,096


class OcrUnavailable(ImageRefused):
    """No OCR engine on this machine (or none of the configured languages): image checks are off."""

    key = "image.ocr_off"


class OcrTimeout(ImageRefused):
    key = "image.timeout"


class OcrFailed(ImageRefused):
    """The engine ran and failed on this image (a corrupt file past the header check, …)."""

    key = "image.unreadable"


@dataclass(frozen=True)
class OcrText:
    text: str
    width: int
    height: int
    seconds: float


class OcrEngine(Protocol):
    """Reads the text of one image; raises an `ImageRefused` subclass with the sentence to say."""

    async def read(self, data: bytes) -> OcrText: ...

    async def available(self) -> bool:
        """Whether images can be read at all (the engine and one of its languages are installed)."""
        ...


class TesseractOcr:
    def __init__(self, binary: str = "tesseract", langs: str = "eng+rus+ukr", *, timeout_s: float = 20.0,
                 limits: ImageLimits | None = None, max_concurrent: int = 2):
        self.binary = binary
        self.wanted = [x for x in langs.replace(",", "+").split("+") if x.strip()]
        self.timeout_s = timeout_s
        self.limits = limits or ImageLimits()
        self._slots = asyncio.Semaphore(max(1, max_concurrent))
        self._langs: list[str] | None = None  # the wanted languages that are installed, once asked
        self._langs_lock = asyncio.Lock()

    def _exe(self) -> str | None:
        return shutil.which(self.binary)

    async def languages(self) -> list[str]:
        """The configured languages Tesseract has (asked once); [] when Tesseract itself is missing."""
        async with self._langs_lock:
            if self._langs is None:
                self._langs = await self._installed_wanted()
            return self._langs

    async def _installed_wanted(self) -> list[str]:
        exe = self._exe()
        if exe is None:
            log.warning("OCR: %r not found: image checks are off", self.binary)
            return []
        try:
            out, _ = await self._run([exe, "--list-langs"], b"", timeout=10.0)
        except (OSError, OcrTimeout, OcrFailed):
            log.warning("OCR: %s --list-langs failed: image checks are off", exe, exc_info=True)
            return []
        have = {line.strip() for line in out.decode("utf-8", "replace").splitlines()[1:] if line.strip()}
        langs = [x for x in self.wanted if x in have]
        missing = [x for x in self.wanted if x not in have]
        if missing:
            log.warning("OCR: Tesseract has no %s (installed: %s)", "+".join(missing), " ".join(sorted(have)))
        return langs

    async def available(self) -> bool:
        return bool(await self.languages())

    async def _run(self, argv: list[str], stdin: bytes, *, timeout: float) -> tuple[bytes, bytes]:
        # One thread per process: see the module docstring for the measurement.
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE, env=env)
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
        except (TimeoutError, asyncio.CancelledError) as exc:
            proc.kill()
            await asyncio.shield(proc.wait())
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise OcrTimeout(f"{argv[0]} ran over {timeout:g} s") from exc
        if proc.returncode != 0:
            raise OcrFailed(f"{argv[0]} exited {proc.returncode}: {err.decode('utf-8', 'replace')[-300:]}")
        return out, err

    async def read(self, data: bytes) -> OcrText:
        loop = asyncio.get_running_loop()
        info = await asyncio.to_thread(inspect_image, data, self.limits)
        langs = await self.languages()
        exe = self._exe()
        if not langs or exe is None:
            raise OcrUnavailable(f"{self.binary} or its languages {self.wanted} are not installed")
        async with self._slots:
            started = loop.time()
            # --psm 3: automatic page segmentation (screenshots mix headers, columns and captions).
            out, _ = await self._run([exe, "stdin", "stdout", "-l", "+".join(langs), "--psm", "3"], data,
                                     timeout=self.timeout_s)
            seconds = loop.time() - started
        text = out.decode("utf-8", "replace")[:MAX_TEXT_CHARS]
        return OcrText(text=text, width=info.width, height=info.height, seconds=seconds)
