"""Smoke test of training/confidence.py (docs/checkability.md, "Reproduce") on a CLEF-shaped set: eight
claims, English train and dev tweets, Russian dev and train-rest translations; the real MiniLM, e5 and USE
models. It writes both maps (English and cross-script) with their reports, and the file loads as the map
cards use. (The tool had stopped running when the re-rankers gained the USE features; nothing noticed.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from core.matching.confidence import ConfidenceMap

CLAIMS = ["Vaccines cause autism in children.", "5G towers spread the coronavirus.",
          "Drinking hot water kills the virus.", "The Eiffel Tower was sold twice.",
          "Bill Gates wants to microchip everyone.", "Australia's fires were started by arsonists.",
          "Garlic cures COVID-19.", "The moon landing was filmed in a studio."]
EN = {"train": [(10, "vaccines give kids autism!!!", 0), (11, "5G masts are spreading covid", 1),
                (12, "hot water flushes the virus away", 2), (13, "the moon landings were faked in a studio", 7)],
      "dev": [(20, "arsonists lit the bushfires", 5), (21, "eat garlic, it cures covid", 6),
              (22, "Gates will chip us all", 4)]}
RU = {"train-rest": [(10, "прививки вызывают у детей аутизм"), (11, "вышки 5G распространяют ковид"),
                     (13, "высадку на Луну сняли в студии")],
      "dev": [(20, "пожары в Австралии устроили поджигатели"), (21, "чеснок лечит ковид")]}


def write_set(tmp_path: Path) -> tuple[Path, Path]:
    data, ru = tmp_path / "clef", tmp_path / "ru"
    (data / "verified_claims.docs.tsv").parent.mkdir(parents=True)
    (data / "verified_claims.docs.tsv").write_text(
        "\tvclaim\ttitle\n" + "".join(f"{i}\t{c}\t{c}\n" for i, c in enumerate(CLAIMS)), encoding="utf-8")
    for split, rows in EN.items():
        (data / split).mkdir()
        (data / split / "tweets.queries.tsv").write_text(
            "\ttweet_content\n" + "".join(f"{q}\t{t}\n" for q, t, _ in rows), encoding="utf-8")
        (data / split / "tweet-vclaim-pairs.qrels").write_text(
            "".join(f"{q}\t0\t{c}\t1\n" for q, _, c in rows), encoding="utf-8")
    for split, pairs in RU.items():
        (ru / split).mkdir(parents=True)
        (ru / split / "tweets.queries.tsv").write_text(
            "tweet_id\ttweet_content\n" + "".join(f"{q}\t{t}\n" for q, t in pairs), encoding="utf-8")
    return data, ru


def test_the_calibration_tool_writes_both_maps(tmp_path, model_dir):
    data, ru = write_set(tmp_path)
    out = tmp_path / "confidence.json"
    log = subprocess.run([sys.executable, "-m", "training.confidence", "--data", str(data), "--translations", str(ru),
                          "--cache", str(tmp_path / "cache"), "--model-dir", str(model_dir), "--out", str(out)],
                         capture_output=True, text=True, timeout=900, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert "dev_ru_with_the_english_map" in log, log
    written = json.loads(out.read_text(encoding="utf-8"))
    prov = written["provenance"]
    assert {"platt", "train", "dev", "related_dev", "related_dev_at_suggest", "cross_script"} <= set(prov)
    assert {"train_rest_ru", "dev_ru", "related_dev_ru"} <= set(prov["cross_script"])
    assert all(0.0 <= prov[s]["ece_calibrated"] <= 1.0 for s in ("train", "dev"))
    assert 0.0 <= prov["cross_script"]["dev_ru_with_the_english_map"]["ece_calibrated"] <= 1.0
    cal = ConfidenceMap.load(out)
    assert cal.cross_script_floor is not None and 0.0 < cal.cross_script_floor <= 1.0
    assert 0.0 < cal.related_floor <= 1.0 and 0.0 < cal.inherited(0.9) <= 0.99
