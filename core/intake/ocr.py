"""Text from an image: the OCR engine Protocol and its Tesseract implementation (the `tesseract` CLI
run as an asyncio subprocess, so nothing blocks the event loop and a slow image can be killed).

Why the CLI and not a binding: the bindings on PyPI (pytesseract) run the same CLI through a temp file
and a blocking `subprocess`; tesserocr needs a compiler and the headers at install time. The CLI reads
the image on stdin and writes the text to stdout; one process per image costs ~0.1 s of start-up
(0.15 s for eng+rus+ukr here) next to ~0.3-1 s of recognition.

Before Tesseract sees a byte, core/intake/image_limits.py has checked the format and the pixel count from the
header. Processes run at most `max_concurrent` at once (2: the cores of the machine measured), each
with OMP_THREAD_LIMIT=1: on that 2-core machine, busy with other work, a 1200x900 page of 25 lines took
2.4 s with one thread against 6.9-10 s with OpenMP's own threads, and 4 such pages two at a time 9.1 s
against 22.8 s (docs/ocr.md).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
from dataclasses import dataclass
from typing import Protocol

from core.intake.image_limits import ImageLimits, ImageRefused, inspect_image
from core.intake.language import detect_language

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
            # --psm 6 (one block of text, read line by line): on our renders (evals/bench_ocr.py) it read
            # text rotated by 2° at 1.2% CER where the automatic layout analysis (--psm 3) split lines
            # into columns and read them out of order (7.4%); straight text was read the same by both.
            out, _ = await self._run([exe, "stdin", "stdout", "-l", "+".join(langs), "--psm", "6"], data,
                                     timeout=self.timeout_s)
            narrower = _russian_first(langs, out.decode("utf-8", "replace"))
            if narrower is not None:
                out, _ = await self._run([exe, "stdin", "stdout", "-l", "+".join(narrower), "--psm", "6"], data,
                                         timeout=max(self.timeout_s - (loop.time() - started), 1.0))
            seconds = loop.time() - started
        text = fix_homoglyphs(out.decode("utf-8", "replace")[:MAX_TEXT_CHARS])
        return OcrText(text=text, width=info.width, height=info.height, seconds=seconds)


# With Ukrainian loaded, Tesseract reads Russian letters as Ukrainian ones: a Russian post's "Вышки 5G
# распространяют" came back "Вьшки 5С", "Украина" "Украйна", and the message lost its match; Russian read first
# and alone ("rus+eng") reads it right. A Ukrainian text needs its own letters (і, ї, є), so the first read, with
# every language, stays the text unless it reads as Russian; then a second read with Russian first is.
def _russian_first(langs: list[str], text: str) -> list[str] | None:
    """The languages for a second read of a Russian text read with Ukrainian loaded too, else None."""
    if not {"rus", "ukr"} <= set(langs) or len(_CYR.findall(text)) <= len(_LAT.findall(text)) \
            or detect_language(text) != "ru":
        return None
    return ["rus", *(x for x in langs if x not in ("rus", "ukr"))]


# Latin letters Tesseract returns for the Cyrillic ones that look the same, with eng+rus+ukr loaded:
# "ТЕРМІНОВО" came back as "TEPMIHOBO" and "На" as "Ha" (a 16% CER render, evals/bench_ocr.py). To the
# matcher that is another word in another script.
_TO_CYRILLIC = str.maketrans("ABCEHKMOPTXaceopxy", "АВСЕНКМОРТХасеорху")
_TO_UKRAINIAN = str.maketrans("Ii", "Іі")
_HOMOGLYPHS = set("ABCEHKMOPTXaceopxy")
_WORD = re.compile(r"[^\W\d_]+")
_CYR = re.compile(r"[\u0400-\u04ff]")
_LAT = re.compile(r"[A-Za-z]")
_UK_ONLY = re.compile(r"[іїєґІЇЄҐ]")


def fix_homoglyphs(text: str) -> str:
    """Cyrillic words Tesseract spelled partly or wholly in look-alike Latin letters, back in Cyrillic.

    A word mixing both scripts gets its look-alikes replaced; a wholly Latin word only when every letter
    has a look-alike, the text is mostly Cyrillic ("COVID" keeps its V, so it stays Latin) and it is not
    a short all-capitals word (BBC and OK in a Russian text are Latin; "Ha", "y" and "TEPMIHOBO" are
    not). `I`/`i`
    become the Ukrainian `І`/`і` only in a text with Ukrainian-only letters."""
    cyr, lat = len(_CYR.findall(text)), len(_LAT.findall(text))
    if not cyr or not lat:
        return text
    ukrainian = bool(_UK_ONLY.search(text))
    mostly_cyrillic = cyr > lat

    def word(m: re.Match[str]) -> str:
        w = m[0]
        latin = {c for c in w if "A" <= c <= "z" and c.isascii()}
        if not latin:
            return w
        mappable = _HOMOGLYPHS | (set("Ii") if ukrainian else set())
        if not latin <= mappable:
            return w
        if _CYR.search(w) or (mostly_cyrillic and (len(w) >= 4 or not w.isupper())):
            w = w.translate(_TO_CYRILLIC)
            return w.translate(_TO_UKRAINIAN) if ukrainian else w
        return w

    return _WORD.sub(word, text)
