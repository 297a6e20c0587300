"""Language identification (core/intake/language.py): py3langid over the languages e5 reads, Russian and
Ukrainian told apart by their own letters where the model hesitates, English where it is plausible."""

from __future__ import annotations

import pytest

from core.intake.language import detect_language, reply_language


@pytest.mark.parametrize("text,lang", [
    ("Las vacunas causan autismo", "es"), ("Impfstoffe verursachen Autismus", "de"),
    ("Szczepionki powodują autyzm", "pl"), ("Les vaccins provoquent l'autisme", "fr"),
    ("ვაქცინები იწვევს აუტიზმს", "ka"), ("اللقاحات تسبب التوحد", "ar"),
    ("Vaccines cause autism", "en"), ("Kyiv curfew from Monday", "en"), ("hello", "en"),
    ("Вышки 5G распространяют коронавирус", "ru"), ("Вежі 5G поширюють коронавірус", "uk"),
    ("Вакцини викликають аутизм", "uk"), ("Говорят что 5G towers cause COVID, это правда?", "ru"),
])
def test_languages(text: str, lang: str) -> None:
    assert detect_language(text) == lang


def test_replies_stay_in_english_russian_or_ukrainian() -> None:
    assert [reply_language(x) for x in ("ru", "uk", "en", "es", "ka")] == ["ru", "uk", "en", "en", "en"]


def test_the_compact_table_kept_in_the_models_dir_ranks_exactly_as_the_package_model(tmp_path) -> None:
    """The cached subset (mapped .npy files) must give the same probabilities, not close ones: a first
    start and a later one answer the same message in the same language."""
    from core.intake.language import _compact_dir, _full_subset, _load_compact, _save_compact

    folder = _compact_dir(tmp_path)
    full = _full_subset()
    _save_compact(full, folder)
    compact = _load_compact(folder)
    texts = ["Las vacunas causan autismo", "Вежі 5G поширюють коронавірус", "Kyiv curfew from Monday",
             "ვაქცინები იწვევს აუტიზმს", "Говорят что 5G towers cause COVID", "", "12345", "Ёжик"]
    for text in texts:
        assert compact.rank(text) == full.rank(text)
        assert compact.classify(text) == full.classify(text)


def test_a_new_process_builds_the_table_once_and_a_damaged_one_is_rebuilt(tmp_path) -> None:
    import subprocess
    import sys

    from core.intake.language import _compact_dir

    script = ("import sys; from pathlib import Path; import core.intake.language as L; "
              "L.use_cache_dir(Path(sys.argv[1])); print(L.detect_language('Вежі 5G поширюють коронавірус'))")
    run = [sys.executable, "-c", script, str(tmp_path)]
    assert subprocess.run(run, capture_output=True, text=True, check=True).stdout.strip() == "uk"
    folder = _compact_dir(tmp_path)
    assert (folder / "classes.txt").is_file() and (folder / "nextmove.npy").is_file()
    (folder / "nextmove.npy").write_bytes(b"not an array")
    assert subprocess.run(run, capture_output=True, text=True, check=True).stdout.strip() == "uk"
    assert (folder / "nextmove.npy").stat().st_size > 1000
