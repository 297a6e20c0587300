"""Cross-script term overlap (core/matching/crosslingual_terms.py, core/matching/transliterate.py) on the shipped lexicon."""

import gzip

import pytest

from core.matching import crosslingual_terms as xl
from core.matching.features import CorpusStats
from core.matching.transliterate import latin, skeleton

CLAIMS = ["Bill Gates wants to microchip everyone with vaccines.", "5G towers spread the coronavirus.",
          "Donald Trump said drinking bleach cures COVID-19.", "The Eiffel Tower was sold twice in 1925."]


@pytest.mark.parametrize("ru, en", [("Трамп", "Trump"), ("Гейтс", "Gates"), ("Байден", "Biden"), ("Путин", "Putin"),
                                    ("Зеленский", "Zelensky"), ("Маск", "Musk"), ("Клинтон", "Clinton")])
def test_names_share_a_skeleton_across_scripts(ru, en):
    assert skeleton(ru) == skeleton(en)


def test_latin_is_bgn_like_and_passes_latin_through():
    assert latin("Зеленский") == "zelenskiy" and latin("Щукин") == "shchukin" and latin("COVID-19") == "covid-19"
    assert skeleton("Трамп") != skeleton("Путин")


def test_shipped_lexicon_translates_common_words():
    lex = xl.load_lexicon()
    assert len(lex) > 30000
    for ru, en in (("вакцины", "vaccine"), ("выборы", "election"), ("полиция", "police"), ("деньги", "money")):
        assert en in lex[ru], (ru, lex.get(ru))


def _idf():
    stats = CorpusStats()
    for c in CLAIMS:
        stats.add(c, "")
    return stats.doc.idf, stats.doc.avg_len


def test_russian_message_scores_its_english_claim_above_the_others():
    lex = xl.load_lexicon()
    idf, avg = _idf()
    q = xl.term_groups("Гейтс хочет чипировать всех через вакцины", lex)
    docs = [xl.term_groups(c, lex) for c in CLAIMS]
    bm25 = [xl.xl_bm25(q, d, idf, avg) for d in docs]
    cover = [xl.xl_cover(q, d, idf) for d in docs]
    names = [xl.name_match(q, d) for d in docs]
    assert max(range(4), key=bm25.__getitem__) == 0 and bm25[0] > 0.1
    assert max(range(4), key=cover.__getitem__) == 0
    assert names == [1.0, 0.0, 0.0, 0.0]
    # an inflected name still matches: "Трампа" ~ Trump
    assert xl.name_match(xl.term_groups("По словам Трампа, отбеливатель лечит", lex), docs[2]) == 1.0


def test_reverse_direction_and_degenerate_inputs():
    lex = xl.load_lexicon()
    idf, avg = _idf()
    en = xl.term_groups("Bill Gates vaccines microchip", lex)
    ru_doc = xl.term_groups("Билл Гейтс и вакцины с микрочипами", lex)
    assert xl.xl_bm25(en, ru_doc, idf, avg) > 0 and xl.name_match(en, ru_doc) == 1.0
    empty = xl.term_groups("", lex)
    for a, b in ((empty, ru_doc), (ru_doc, empty), (empty, empty)):
        assert xl.xl_bm25(a, b, idf, avg) == 0.0 and xl.xl_cover(a, b, idf) == 0.0 and xl.name_match(a, b) == 0.0


def test_lexicon_file_format(tmp_path):
    p = tmp_path / "lex.tsv.gz"
    with gzip.open(p, "wt", encoding="utf-8") as f:
        f.write("# header\nвышка\ttower\nпусто\t\n")
    assert dict(xl.load_lexicon(p)) == {"вышка": ("tower",)}
    g = xl.term_groups("вышка", xl.load_lexicon(p))
    assert len(g.groups) == 1 and len(g.groups[0]) == 2  # translation + romanisation "vyshka"


def test_feature_columns_for_a_russian_message():
    import numpy as np

    from core.matching.features import FEATURE_NAMES, candidate_features, prepare_query

    stats = CorpusStats()
    for c in CLAIMS:
        stats.add(c, "")
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(4, 8)).astype(np.float32)
    text = "Гейтс хочет чипировать всех через вакцины"
    pq = prepare_query(text, text, vecs[0], stats)
    X = candidate_features(pq, CLAIMS, [""] * 4, vecs, vecs, {}, stats)
    cols = {n: X[:, FEATURE_NAMES.index(n)] for n in ("xl_bm25", "xl_cover", "xl_names")}
    for name, col in cols.items():
        assert int(np.argmax(col)) == 0 and col[0] > 0 and not col[1:].any(), (name, col)
    # an English message against English claims: the words map to themselves, no names across scripts
    en = prepare_query(CLAIMS[1], CLAIMS[1], vecs[1], stats)
    Xe = candidate_features(en, CLAIMS, [""] * 4, vecs, vecs, {}, stats)
    assert int(np.argmax(Xe[:, FEATURE_NAMES.index("xl_bm25")])) == 1 and not Xe[:, FEATURE_NAMES.index("xl_names")].any()


def test_the_lexicon_is_read_only_for_a_cyrillic_word(tmp_path):
    lazy = xl.LazyLexicon(tmp_path / "absent.tsv.gz")
    g = xl.term_groups("Bill Gates wants to microchip everyone", lazy)  # English only: never opened
    assert len(g.groups) == 5
    with pytest.raises(FileNotFoundError):
        xl.term_groups("вышка", lazy)


def test_the_shipped_lexicon_is_sorted_and_reads_as_the_file_says() -> None:
    """Lookups bisect the file's lines, so it must stay sorted by term (training/lexicon.py writes
    it so); every entry reads back as its line."""
    import gzip

    lex = xl.load_lexicon()
    assert isinstance(lex, xl.SortedLexicon) and lex.is_sorted()
    lines = [ln for ln in gzip.open(xl.LEXICON_PATH, "rt", encoding="utf-8").read().splitlines()
             if ln and not ln.startswith("#")]
    assert len(lex) == len(lines) > 60_000
    for line in lines[::997]:
        src, _, tgt = line.partition("\t")
        assert lex[src] == tuple(tgt.split())
    assert "zzz-not-a-word" not in lex and lex.get("") is None


def test_an_unsorted_file_is_told_apart(tmp_path) -> None:
    import gzip

    p = tmp_path / "lex.tsv.gz"
    with gzip.open(p, "wt", encoding="utf-8") as f:
        f.write("# comment\nя\tme\nа\tand\n")
    assert not xl.SortedLexicon(gzip.open(p, "rb").read()).is_sorted()


def test_ukrainian_words_take_their_russian_cognates_translations() -> None:
    """training/lexicon.py's pivot: a Ukrainian word the Russian list lacks takes the translations of its
    Russian spelling, within two changed letters; short words and other words are left as they were."""
    from training.lexicon import pivot_ukrainian, russian_spellings

    assert "области" in russian_spellings("області") and "население" in russian_spellings("населення")
    lexicon = {"области": ["area"], "население": ["population"], "рок": ["rock"], "області": ["plastering"],
               "решение": ["solution"]}
    russian = {"области", "население", "рок", "решение"}
    gained = pivot_ukrainian(lexicon, russian, ["області", "населення", "рік", "рішення", "области"])
    assert gained == 2
    assert lexicon["області"] == ["area", "plastering"]  # the cognate's first, then its own
    assert lexicon["населення"] == ["population"]
    assert "рік" not in lexicon  # under five letters: "рік" (year) is not "рок" (rock)
    assert "рішення" not in lexicon  # three letters apart from "решение"
    assert lexicon["области"] == ["area"]  # a Russian word keeps its entry


def test_the_shipped_lexicon_reads_ukrainian_through_russian_cognates() -> None:
    lex = xl.load_lexicon()
    assert "area" in lex["області"] and "population" in lex["населення"]
