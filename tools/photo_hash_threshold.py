"""How many bits apart is "the same photo"? Generates pictures with Pillow (nothing downloaded), makes the
variants a photo gets as it travels between channels, and counts, for each Hamming threshold, the variants
missed and the pairs of different pictures taken for the same one:

    .venv/bin/python tools/photo_hash_threshold.py [--bases 24] [--seed 7] [--json out.json]

Pictures, `--bases` of each kind:
  scene       a photo-like scene: a gradient sky and ground, shapes, texture
  card        a news card: one of four shared templates (background, band, logo) with its own headline;
              cards of one template are the hard case: the same layout, another story
  screenshot  a chat screenshot: white, bubbles of text lines of its own lengths; alike to a hash
  mixed       a photo with a caption band (a scene under a card's band)

Variants of each picture: JPEG quality 30, 50, 70, 95; resized to 50, 75, 150, 200 % (then JPEG 85, as
Telegram re-encodes); cropped 2, 5 and 8 % (from every side, and from one corner); resized 50 % at quality
30; a PNG of the original. A variant is compared with the original and with the picture's quality-95 JPEG.

The product's hash (core/photo_hash.py: 256-bit pHash with a reduced-scale JPEG decode) is measured, and
for comparison 64-bit pHash, imagehash's dHash (64 and 256 bits) and, when the `pdqhash` package is
importable, PDQ (256 bits).
"""

from __future__ import annotations

import argparse
import io
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.photo_hash import photo_hash  # noqa: E402

W, H = 960, 720  # a mid-size Telegram photo
WORDS = ("breaking news army city mayor power plant missile attack bridge port price grain fuel border"
         " election vote court minister strike flood fire rescue hospital school water bank dollar").split()


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _jpeg(img: Image.Image, quality: int) -> bytes:
    buf = io.BytesIO()
    img.convert("RGB").save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _colour(rng: random.Random) -> tuple[int, int, int]:
    return (rng.randrange(256), rng.randrange(256), rng.randrange(256))


def scene(rng: random.Random) -> Image.Image:
    sky, ground = _colour(rng), _colour(rng)
    y = np.linspace(0, 1, H)[:, None, None]
    horizon = rng.uniform(0.3, 0.7)
    top = np.array(sky) * (1 - y / horizon * 0.5)
    bottom = np.array(ground) * (0.6 + 0.4 * (y - horizon) / (1 - horizon))
    arr = np.where(y < horizon, top, bottom) * np.ones((1, W, 1))
    arr += np.random.default_rng(rng.randrange(1 << 30)).normal(0, 12, (H, W, 3))
    img = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
    d = ImageDraw.Draw(img)
    for _ in range(rng.randrange(4, 12)):
        x0, y0 = rng.randrange(W), rng.randrange(H)
        w, h = rng.randrange(40, 400), rng.randrange(40, 300)
        shape = rng.choice(("rect", "ellipse", "poly"))
        if shape == "rect":
            d.rectangle((x0, y0, x0 + w, y0 + h), fill=_colour(rng))
        elif shape == "ellipse":
            d.ellipse((x0, y0, x0 + w, y0 + h), fill=_colour(rng))
        else:
            d.polygon([(x0 + rng.randrange(-w, w), y0 + rng.randrange(-h, h)) for _ in range(5)], fill=_colour(rng))
    return img.filter(ImageFilter.GaussianBlur(1.2))


TEMPLATES = 4


def card(rng: random.Random, template: int) -> Image.Image:
    t = random.Random(1000 + template)  # the template: the same for every card of it
    img = Image.new("RGB", (W, H), _colour(t))
    d = ImageDraw.Draw(img)
    band = t.randrange(H // 2, H - 200)
    d.rectangle((0, band, W, band + 180), fill=_colour(t))
    d.ellipse((W - 140, 30, W - 30, 140), fill=_colour(t))  # the outlet's logo
    d.text((40, 40), "NEWS", fill=(255, 255, 255), font=_font(48))
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(6, 14))).upper()
    lines, line = [], ""
    for w in words.split():
        if len(line) + len(w) > 22:
            lines.append(line)
            line = ""
        line = f"{line} {w}".strip()
    lines.append(line)
    for i, text in enumerate(lines[:4]):
        d.text((40, 160 + i * 70), text, fill=_colour(rng), font=_font(56))
    d.text((40, band + 60), " ".join(rng.choice(WORDS) for _ in range(5)), fill=(255, 255, 255), font=_font(40))
    return img


def screenshot(rng: random.Random) -> Image.Image:
    img = Image.new("RGB", (W, H), (255, 255, 255))
    d = ImageDraw.Draw(img)
    y = 20
    while y < H - 80:
        right = rng.random() < 0.4
        n = rng.randrange(1, 4)
        width = rng.randrange(300, W - 120)
        x0 = W - 40 - width if right else 40
        d.rounded_rectangle((x0, y, x0 + width, y + 30 + n * 36), 16, fill=(220, 248, 198) if right else (240, 240, 240))
        for k in range(n):
            d.text((x0 + 16, y + 12 + k * 36), " ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 8))),
                   fill=(20, 20, 20), font=_font(28))
        y += 50 + n * 36
    return img


def mixed(rng: random.Random) -> Image.Image:
    img = scene(rng)
    d = ImageDraw.Draw(img)
    d.rectangle((0, H - 160, W, H), fill=(10, 10, 10))
    d.text((30, H - 120), " ".join(rng.choice(WORDS) for _ in range(6)), fill=(255, 255, 255), font=_font(44))
    return img


def _crop(img: Image.Image, frac: float, corner: bool) -> Image.Image:
    dx, dy = int(img.width * frac), int(img.height * frac)
    box = (0, 0, img.width - 2 * dx, img.height - 2 * dy) if corner else (dx, dy, img.width - dx, img.height - dy)
    return img.crop(box)


def _resized(img: Image.Image, scale: float) -> Image.Image:
    return img.resize((max(1, int(img.width * scale)), max(1, int(img.height * scale))), Image.Resampling.LANCZOS)


VARIANTS: dict[str, Callable[[Image.Image], bytes]] = {
    **{f"jpeg q{q}": (lambda img, q=q: _jpeg(img, q)) for q in (30, 50, 70, 95)},
    **{f"resize {int(s * 100)}%": (lambda img, s=s: _jpeg(_resized(img, s), 85)) for s in (0.5, 0.75, 1.5, 2.0)},
    **{f"crop {int(f * 100)}% sides": (lambda img, f=f: _jpeg(_crop(img, f, False), 85)) for f in (0.02, 0.05, 0.08)},
    **{f"crop {int(f * 100)}% corner": (lambda img, f=f: _jpeg(_crop(img, f, True), 85)) for f in (0.02, 0.05, 0.08)},
    "resize 50% + q30": lambda img: _jpeg(_resized(img, 0.5), 30),
    "png": _png,
}


@dataclass
class Method:
    name: str
    bits: int
    hash: Callable[[bytes], int]


def _methods() -> list[Method]:
    import imagehash

    def of(fn: Callable[..., object], size: int) -> Callable[[bytes], int]:
        def run(data: bytes) -> int:
            with Image.open(io.BytesIO(data)) as img:
                img.draft("RGB", (8 * size, 8 * size))
                return int(str(fn(img, hash_size=size)), 16)
        return run

    found = [Method("phash 256 (product)", 256, photo_hash), Method("phash 64", 64, of(imagehash.phash, 8)),
             Method("dhash", 64, of(imagehash.dhash, 8)), Method("dhash 16", 256, of(imagehash.dhash, 16))]
    try:
        import pdqhash  # type: ignore[import-not-found]
    except ImportError:
        return found

    def pdq(data: bytes) -> int:
        with Image.open(io.BytesIO(data)) as img:
            vec, _quality = pdqhash.compute(np.asarray(img.convert("RGB")))
        return int("".join("1" if b else "0" for b in vec), 2)

    return [*found, Method("pdq", 256, pdq)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bases", type=int, default=24, help="pictures of each kind")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    pictures: list[tuple[str, Image.Image]] = []
    for i in range(args.bases):
        pictures.append(("scene", scene(rng)))
        pictures.append((f"card t{i % TEMPLATES}", card(rng, i % TEMPLATES)))
        pictures.append(("screenshot", screenshot(rng)))
        pictures.append(("mixed", mixed(rng)))
    originals = [_jpeg(img, 95) for _, img in pictures]
    variants = [{name: make(img) for name, make in VARIANTS.items()} for _, img in pictures]
    report: dict[str, object] = {"pictures": len(pictures), "variants": len(VARIANTS), "methods": {}}
    for method in _methods():
        started = time.process_time()
        base = [method.hash(b) for b in originals]
        per = [{k: method.hash(b) for k, b in v.items()} for v in variants]
        secs = time.process_time() - started
        n_hashes = len(originals) + sum(len(v) for v in variants)
        pos: dict[str, list[int]] = {k: [] for k in VARIANTS}
        for h0, hv in zip(base, per):
            for k, h in hv.items():
                pos[k].append((h0 ^ h).bit_count())
        neg: list[tuple[int, str, str]] = []
        for i in range(len(base)):
            for j in range(i + 1, len(base)):
                neg.append(((base[i] ^ base[j]).bit_count(), pictures[i][0], pictures[j][0]))
        # Variants of different pictures: two channels' re-encodings of two different photos.
        for i in range(len(base)):
            j = (i + 4) % len(base)
            neg.append(((per[i]["jpeg q50"] ^ per[j]["resize 50%"]).bit_count(), pictures[i][0], pictures[j][0]))
        negd = np.array([d for d, _, _ in neg])
        hard = np.array([d for d, a, b in neg if a == b and a.startswith("card")])
        closest: dict[str, int] = {}
        for d, a, b in neg:
            kind = " / ".join(sorted((a.split()[0], b.split()[0])))
            closest[kind] = min(closest.get(kind, 10**6), d)
        rows = []
        top = method.bits // 4
        for t in range(0, top + 1, max(1, method.bits // 64)):
            missed = {k: int(sum(d > t for d in v)) for k, v in pos.items()}
            rows.append({"threshold": t, "missed": sum(missed.values()), "missed_by_variant": missed,
                         "false_matches": int((negd <= t).sum()), "false_same_template": int((hard <= t).sum())})
        report["methods"][method.name] = {  # type: ignore[index]
            "bits": method.bits, "ms_per_hash": round(1000 * secs / n_hashes, 2),
            "positives": sum(len(v) for v in pos.values()), "negatives": len(neg),
            "closest_different": int(negd.min()), "closest_same_template": int(hard.min()) if hard.size else None,
            "variant_max": {k: int(max(v)) for k, v in pos.items()}, "closest_by_kind": closest,
            "rows": rows}
        print(f"\n{method.name}: {method.bits} bits, {1000 * secs / n_hashes:.2f} ms of CPU per hash; "
              f"{sum(len(v) for v in pos.values())} variants, {len(neg)} pairs of different pictures "
              f"(closest {negd.min()} bits; cards of one template {hard.min() if hard.size else '-'})")
        print("  closest different pictures by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(closest.items())))
        print("  worst variant distance: " + ", ".join(f"{k} {max(v)}" for k, v in pos.items()))
        print(f"  {'threshold':>9} {'missed':>7} {'false':>6} {'false (same template)':>22}")
        for r in rows:
            print(f"  {r['threshold']:>9} {r['missed']:>7} {r['false_matches']:>6} {r['false_same_template']:>22}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
