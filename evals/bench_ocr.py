"""`tipline bench ocr`: how well and how fast screenshots are read (core/intake/ocr.py, docs/ocr.md).

Images are rendered here with Pillow from our own English, Russian and Ukrainian sentences (written for
this benchmark, in the style of forwarded posts), in the fonts Debian ships with fontconfig (DejaVu), at
several sizes, on light, dark and coloured backgrounds, as PNG and as JPEG, straight and slightly
rotated. Each image goes through the same `TesseractOcr.read` a chat image does (header check, the
subprocess, the time budget) and is scored by character error rate: edit distance between what was
read and what was drawn, whitespace collapsed, over the characters drawn (a micro average over images).
"Clean" renders are PNG, dark text on white, straight, 20 px text or larger: the issue's goal is CER ≤ 5%
on them.
"""

from __future__ import annotations

import io
import statistics
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.settings import Settings
from core.intake.image_limits import ImageLimits
from core.intake.ocr import TesseractOcr
from evals.bench import pct

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")

# Our own sentences; none is copied from a dataset or a real post.
TEXTS: dict[str, list[str]] = {
    "en": [
        "BREAKING: Drinking hot water with lemon every morning cures the flu in two days, doctors say.",
        "The new bridge over the river was closed on Monday after engineers found cracks in two of its pillars.",
        "Scientists confirm that the 5G rollout caused the coronavirus outbreak in several large cities.",
        "City council votes to ban all cars from the old town starting next spring, the mayor announced.",
        "Share before it gets deleted! The government will switch off the internet for a week in March.",
        "A study of 40,000 adults found that people who walk 8,000 steps a day live longer on average.",
        "Heavy rain is expected across the north of the country on Friday, with up to 60 mm in places.",
        "Vaccines cause autism in children, according to a report that was never published anywhere.",
    ],
    "ru": [
        "СРОЧНО: горячая вода с лимоном каждое утро вылечит грипп за два дня, говорят врачи.",
        "Новый мост через реку закрыли в понедельник после того, как инженеры нашли трещины в опорах.",
        "Учёные подтвердили, что сети 5G стали причиной вспышки коронавируса в крупных городах.",
        "Городской совет запретил въезд машин в старый город с будущей весны, объявил мэр.",
        "Поделитесь, пока не удалили! Правительство отключит интернет на неделю в марте.",
        "Исследование 40 000 взрослых показало, что те, кто проходит 8000 шагов в день, живут дольше.",
        "В пятницу на севере страны ожидаются сильные дожди, местами до 60 мм осадков.",
        "Прививки вызывают аутизм у детей, сообщается в докладе, который нигде не публиковался.",
    ],
    "uk": [
        "ТЕРМІНОВО: гаряча вода з лимоном щоранку вилікує грип за два дні, кажуть лікарі.",
        "Новий міст через річку закрили в понеділок, бо інженери знайшли тріщини в опорах.",
        "Поширте, поки не видалили! Уряд вимкне інтернет на тиждень у березні.",
        "У п'ятницю на півночі країни очікуються сильні дощі, місцями до 60 мм опадів.",
    ],
}


@dataclass(frozen=True)
class Variant:
    name: str
    font: str = "DejaVuSans.ttf"
    size: int = 28
    fg: str = "#111111"
    bg: str = "#ffffff"
    jpeg_quality: int | None = None  # None: PNG
    rotate: float = 0.0  # degrees, counter-clockwise
    clean: bool = False
    post: bool = False  # drawn as a social post: avatar, name line above, counters below (all scored)


VARIANTS: tuple[Variant, ...] = (
    Variant("clean sans 28 px", clean=True),
    Variant("clean serif 24 px", font="DejaVuSerif.ttf", size=24, clean=True),
    Variant("clean sans bold 20 px", font="DejaVuSans-Bold.ttf", size=20, clean=True),
    Variant("clean condensed 22 px", font="DejaVuSansCondensed.ttf", size=22, clean=True),
    Variant("small sans 14 px", size=14),
    Variant("dark mode (light on #1e1e1e)", fg="#e6e6e6", bg="#1e1e1e"),
    Variant("coloured (#1a3d7c on #dbe8fb)", fg="#1a3d7c", bg="#dbe8fb"),
    Variant("JPEG quality 40", jpeg_quality=40),
    Variant("rotated 2°", rotate=2.0),
    Variant("JPEG 60, rotated 1°, serif 20 px", font="DejaVuSerif.ttf", size=20, jpeg_quality=60, rotate=1.0),
    Variant("post card (avatar, name line, counters), JPEG 75", size=22, jpeg_quality=75, post=True),
)
QUICK_VARIANTS = (VARIANTS[0], VARIANTS[5])


POST_NAME = "Daily Truth News @daily_truth_news · 2h"
POST_COUNTERS = "128 replies 1,204 reposts 3.4K likes"


CHANNELS = ("Труха⚡️Украина", "Инсайдер UA", "Голос правди", "Мамкин политолог", "Readovka", "Резидент")


def channel_post(text: str, n: int = 0) -> bytes:
    """`text` as a screenshot of a Telegram channel post: the channel's name above it in bold blue, the views
    and time in grey below (what `tipline eval realistic --screenshots` checks; `n` varies name and counters)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(str(FONT_DIR / "DejaVuSans.ttf"), 24)
    lines = [line for para in text.splitlines() for line in textwrap.wrap(para, 48) or [""]]
    line_h = 34
    im = Image.new("RGB", (720, 40 + line_h * (len(lines) + 3)), "white")
    draw = ImageDraw.Draw(im)
    draw.text((20, 15), CHANNELS[n % len(CHANNELS)], font=ImageFont.truetype(str(FONT_DIR / "DejaVuSans-Bold.ttf"), 22),
              fill="#2a5885")
    for i, line in enumerate(lines):
        draw.text((20, 23 + line_h * (i + 1)), line, font=font, fill="black")
    draw.text((480, 29 + line_h * (len(lines) + 1)), f"👁 {10 + n % 90}.{n % 10}K  1{n % 10}:4{n % 6}",
              font=ImageFont.truetype(str(FONT_DIR / "DejaVuSans.ttf"), 18), fill="#888888")
    out = io.BytesIO()
    im.save(out, "PNG")
    return out.getvalue()


def drawn_text(text: str, v: Variant) -> str:
    """Everything `render` draws for `text` in variant `v`, in reading order (what the CER is over)."""
    return f"{POST_NAME} {text} {POST_COUNTERS}" if v.post else text


def render(text: str, v: Variant, width: int = 900) -> bytes:
    """`text` drawn as a screenshot-like image: wrapped to `width`, margins, the variant's look."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(str(FONT_DIR / v.font), v.size)
    avg = font.getlength("abcdefghijklmnopqrstuvwxyz абвгдежзийклмнопрстуфхцчшщ") / 54
    lines = textwrap.wrap(text, max(10, int((width - 2 * v.size) / avg)))
    line_h = int(v.size * 1.45)
    top = 3 * line_h if v.post else 0
    im = Image.new("RGB", (width, 2 * v.size + line_h * len(lines) + 2 * top), v.bg)
    draw = ImageDraw.Draw(im)
    if v.post:  # a grey avatar, the name line in bold beside it, the counters in grey under the text
        small = ImageFont.truetype(str(FONT_DIR / "DejaVuSans-Bold.ttf"), int(v.size * 0.8))
        draw.ellipse((v.size, v.size, v.size + 2 * line_h, v.size + 2 * line_h), fill="#9aa5b1")
        draw.text((v.size + 2 * line_h + v.size // 2, v.size + line_h // 2), POST_NAME, font=small, fill="#333333")
        draw.text((v.size, v.size + top + line_h * len(lines) + line_h), POST_COUNTERS,
                  font=ImageFont.truetype(str(FONT_DIR / v.font), int(v.size * 0.8)), fill="#657786")
    for i, line in enumerate(lines):
        draw.text((v.size, v.size + top + i * line_h), line, font=font, fill=v.fg)
    if v.rotate:
        im = im.rotate(v.rotate, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=v.bg)
    out = io.BytesIO()
    if v.jpeg_quality is not None:
        im.save(out, "JPEG", quality=v.jpeg_quality)
    else:
        im.save(out, "PNG")
    return out.getvalue()


def _norm(text: str) -> str:
    return " ".join(text.split())


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions all cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def cer(reference: str, hypothesis: str) -> float:
    ref, hyp = _norm(reference), _norm(hypothesis)
    return edit_distance(ref, hyp) / max(1, len(ref))


@dataclass
class _Tally:
    edits: int = 0
    chars: int = 0
    images: int = 0

    def add(self, ref: str, hyp: str) -> None:
        r = _norm(ref)
        self.edits += edit_distance(r, _norm(hyp))
        self.chars += len(r)
        self.images += 1

    @property
    def cer(self) -> float:
        return round(self.edits / max(1, self.chars), 4)


async def bench_ocr(settings: Settings, *, quick: bool = False,
                    progress: Callable[[str], None] = lambda _m: None) -> dict:
    """CER per variant, language and on clean renders; seconds per image. Raises RuntimeError when
    Tesseract (or every configured language) is missing: there is nothing to measure."""
    ocr = TesseractOcr(settings.ocr_binary, settings.ocr_langs, timeout_s=settings.ocr_timeout_s,
                       limits=ImageLimits(settings.ocr_max_bytes, settings.ocr_max_pixels), max_concurrent=1)
    langs = await ocr.languages()
    if not langs:
        raise RuntimeError(f"bench ocr needs Tesseract ({settings.ocr_binary}) with one of {settings.ocr_langs}")
    variants = QUICK_VARIANTS if quick else VARIANTS
    texts = {lang: items[:2] if quick else items for lang, items in TEXTS.items()}
    by_variant: dict[str, _Tally] = {}
    by_lang: dict[str, _Tally] = {}
    clean, all_ = _Tally(), _Tally()
    clean_lang: dict[str, _Tally] = {}
    seconds: list[float] = []  # the whole read: header check, process start, recognition
    pixels: list[int] = []
    worst: tuple[float, str, str, str] = (0.0, "", "", "")
    for v in variants:
        progress(f"ocr: {v.name}")
        for lang, items in texts.items():
            for text in items:
                data = render(text, v)
                t0 = time.perf_counter()
                read = await ocr.read(data)
                seconds.append(time.perf_counter() - t0)
                pixels.append(read.width * read.height)
                for tally in (by_variant.setdefault(v.name, _Tally()), by_lang.setdefault(lang, _Tally()), all_):
                    tally.add(drawn_text(text, v), read.text)
                if v.clean:
                    clean.add(text, read.text)
                    clean_lang.setdefault(lang, _Tally()).add(text, read.text)
                    c = cer(text, read.text)
                    if c > worst[0]:
                        worst = (round(c, 4), v.name, text, _norm(read.text))
    return {
        "tesseract_langs": "+".join(langs),
        "images": all_.images,
        "cer_clean": clean.cer,
        "cer_clean_by_language": {k: t.cer for k, t in clean_lang.items()},
        "cer_all": all_.cer,
        "cer_by_language": {k: t.cer for k, t in by_lang.items()},
        "cer_by_variant": {k: t.cer for k, t in by_variant.items()},
        "worst_clean": {"cer": worst[0], "variant": worst[1], "drawn": worst[2], "read": worst[3]},
        "seconds_per_image": {"median": round(statistics.median(seconds), 3), "p95": round(pct(seconds, 95), 3),
                              "max": round(max(seconds), 3)},
        "megapixels_median": round(statistics.median(pixels) / 1e6, 3),
    }


def format_ocr(report: dict) -> str:
    lines = [f"images: {report['images']} (Tesseract {report['tesseract_langs']}), "
             f"median {report['megapixels_median']} MP",
             f"CER on clean renders: {report['cer_clean']:.2%} "
             + " ".join(f"{k} {v:.2%}" for k, v in report["cer_clean_by_language"].items()),
             f"CER on everything: {report['cer_all']:.2%} "
             + " ".join(f"{k} {v:.2%}" for k, v in report["cer_by_language"].items()),
             "CER by variant:"]
    lines += [f"  {name}: {value:.2%}" for name, value in report["cer_by_variant"].items()]
    s = report["seconds_per_image"]
    lines.append(f"seconds per image: median {s['median']:.2f}, p95 {s['p95']:.2f}, max {s['max']:.2f}")
    w = report["worst_clean"]
    if w["variant"]:
        lines.append(f"worst clean render ({w['variant']}, CER {w['cer']:.2%}):\n  drawn: {w['drawn']}\n  read:  {w['read']}")
    return "\n".join(lines)
