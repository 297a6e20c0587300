"""Is there a checkable claim in this message at all? The offline answer, before any search.

Without an LLM every message used to be searched and given a confidence, so "hello", "thanks" or
"Pineapple on pizza is disgusting" came back "Unverified · 95 %". A small model reads the message's
multilingual-e5 query vector (the one the matcher computes for the same cleaned text, so a checkable message
pays no extra model call: `E5Encoder` caches it) plus a few cheap cues: a few networks of one hidden layer,
averaged, give p_claim, the probability that the message states a verifiable fact. Below the threshold the
check stops with NOT_CHECKABLE and a one-line why in the message's language.

Trained by training/checkability.py on CLEF-2020 CheckThat! Task 1 train (English COVID tweets,
`claim` label) and our own English / Russian / Ukrainian chat messages (training/data/); figures and the
measured value of each cue in docs/checkability.md. With an LLM configured the LLM's classification
is the authority and this gate does not run, unless the LLM fails (core/engine.py: then there is no
classification and this gate decides).
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from core.logistic import platt, sigmoid
from core.intake.claims import OPINION_RE, QUESTION_START_RE, TRUTH_QUESTION_RE, entities, split_sentences
from core.i18n import t
from schema.models import Result, Step, Verdict
from core.encoders.multilingual import MultilingualEncoder
from core.textclean import clean_query

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "data" / "checkability.json"

Reason = Literal["QUESTION", "OPINION", "PROMO", "NONE"]

# "They say X", "heard that X", "is that true?": a frame that hands a claim over to be checked.
_RELAYED = re.compile(
    r"\b(?:they say|people say|i (?:read|heard)|heard that|apparently|is (?:that|this|it) (?:true|real)|"
    r"говорят|слышал\w*|читал\w*|пишут|это правда|кажуть|чув|чула|це правда)\b", re.IGNORECASE)
# Selling and calls to action: the why-line's PROMO, and a cue the model weighs.
_PROMO = re.compile(
    r"(?:\b(?:buy|sale|discount|shop now|order now|subscribe|follow us|sign up|click|promo ?code|giveaway|"
    r"dm me|link in bio|retweet|repost|share this|tag \w+ friends|sign the petition|vote for)\b|"
    r"скидк\w*|распродаж\w*|купи\w*|закажи\w*|заказывай\w*|подписыва\w*|подпиш\w*|промокод\w*|"
    r"переходи\w* по ссылке|репост\w*|лайк\w*|голосуй\w*|розыгрыш\w*|знижк\w*|замовля\w*|підпису\w*|"
    r"купу\w*|поширте\w*|розіграш\w*)", re.IGNORECASE)

# Each cue earned its place on train cross-validation (docs/checkability.md has the ablation): opinion
# words, first-person pronouns and emoji were measured too and dropped (together +0.002 without them;
# the e5 vector already carries them). The opinion and promo patterns still pick the why-line.
CUE_NAMES: tuple[str, ...] = ("log_words", "digits", "question", "relayed", "exclaim", "entities", "promo")


def _is_question(sentence: str) -> bool:
    return sentence.rstrip("\"'»”)] ").endswith("?") or bool(QUESTION_START_RE.match(sentence))


def _relays_claim(text: str, sentences: list[str]) -> bool:
    return bool(_RELAYED.search(text)) or any(TRUTH_QUESTION_RE.match(s) for s in sentences)


def cues(text: str) -> np.ndarray:
    """The cheap features of one (cleaned) message, in CUE_NAMES order."""
    sentences = split_sentences(text) or [text]
    return np.array([
        math.log1p(len(text.split())),
        1.0 if any(ch.isdigit() for ch in text) else 0.0,
        sum(_is_question(s) for s in sentences) / len(sentences),
        1.0 if _relays_claim(text, sentences) else 0.0,
        1.0 if "!" in text else 0.0,
        min(len(entities(text)), 3) / 3.0,
        1.0 if _PROMO.search(text) else 0.0,
    ], dtype=np.float64)


def reason(text: str) -> Reason:
    """Why a message the model turned away has no claim, for the one-line answer."""
    sentences = split_sentences(text) or [text]
    if _PROMO.search(text):
        return "PROMO"
    if all(_is_question(s) for s in sentences):
        return "QUESTION"
    if OPINION_RE.search(text):
        return "OPINION"
    return "NONE"


@dataclass(frozen=True)
class Network:
    """One member: [e5 query vector, cues], standardised -> relu hidden layer -> logit."""

    hidden_weights: np.ndarray  # (features, hidden)
    hidden_bias: np.ndarray
    out_weights: np.ndarray
    out_bias: float

    @classmethod
    def from_dict(cls, data: dict) -> Network:
        return cls(np.asarray(data["W1"], dtype=np.float64), np.asarray(data["b1"], dtype=np.float64),
                   np.asarray(data["w2"], dtype=np.float64), float(data["b2"]))

    def probability(self, z: np.ndarray) -> np.ndarray:
        return sigmoid(np.maximum(z @ self.hidden_weights + self.hidden_bias, 0.0) @ self.out_weights + self.out_bias)


@dataclass(frozen=True)
class CheckabilityModel:
    """The mean probability of small networks over [e5 query vector, cues]; weights in core/data/checkability.json."""

    cue_names: tuple[str, ...]
    embedding_dim: int
    mean: np.ndarray
    std: np.ndarray
    networks: tuple[Network, ...]
    threshold: float
    provenance: dict = field(default_factory=dict)
    # Platt scaling (a, b) of the networks' mean: averaged networks are too sure at the ends, and p_claim is
    # read as a probability (SURE_NO_CLAIM, the NOT_CHECKABLE confidence).
    calibration: tuple[float, float] = (1.0, 0.0)

    @classmethod
    def from_dict(cls, data: dict) -> CheckabilityModel:
        names = tuple(data["cue_names"])
        dim = int(data["embedding_dim"]) + len(names)
        mean, std = (np.asarray(data[k], dtype=np.float64) for k in ("mean", "std"))
        networks = tuple(Network.from_dict(m) for m in data.get("networks", ()))
        if not networks or mean.shape != (dim,) or std.shape != (dim,) or any(
                n.hidden_weights.shape[0] != dim or n.hidden_weights.shape[1] != n.out_weights.shape[0]
                for n in networks):
            raise ValueError("checkability weights do not match its features")
        cal = data.get("calibration", {"a": 1.0, "b": 0.0})
        return cls(names, int(data["embedding_dim"]), mean, np.where(std > 0, std, 1.0), networks,
                   float(data["threshold"]), dict(data.get("provenance", {})), (float(cal["a"]), float(cal["b"])))

    @classmethod
    def load(cls, path: Path | str = DEFAULT_PATH) -> CheckabilityModel:
        model = cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
        if model.cue_names != CUE_NAMES:
            raise ValueError(f"{Path(path).name} was trained on other cues; rerun python -m training.checkability")
        return model

    def features(self, vectors: np.ndarray, texts: list[str]) -> np.ndarray:
        return np.hstack([np.asarray(vectors, dtype=np.float64).reshape(len(texts), -1),
                          np.vstack([cues(x) for x in texts]) if texts else np.zeros((0, len(self.cue_names)))])

    def score(self, features: np.ndarray) -> np.ndarray:
        """p_claim for each row of `features` (n, embedding_dim + len(cue_names))."""
        z = (np.asarray(features, dtype=np.float64).reshape(-1, len(self.mean)) - self.mean) / self.std
        return platt(np.mean([n.probability(z) for n in self.networks], axis=0), *self.calibration)


@lru_cache(maxsize=1)
def default_checkability() -> CheckabilityModel:
    """The shipped model, loaded once for the gate and the same-claim decision that reads its probability."""
    return CheckabilityModel.load()


@dataclass(frozen=True)
class Checkability:
    p_claim: float  # probability that the message states a verifiable fact
    checkable: bool
    reason: Reason  # why not, when not checkable

    def why(self, language: str) -> str:
        return t(f"notcheckable.{self.reason}", language)


# An `auto` match is chosen for precision 0.95 of inherited verdicts (core/matching/same_claim.py); the gate turns
# away a message that matched only when it is as sure there is no claim (its probabilities are calibrated).
SURE_NO_CLAIM = 1 - 0.95


class ClaimGate:
    """The offline "is there a claim?" decision for whole messages."""

    def __init__(self, model: CheckabilityModel, encoder: MultilingualEncoder):
        self.model = model
        self.encoder = encoder

    def _decide(self, text: str, clean: str, p: float) -> Checkability:
        ok = p >= self.model.threshold
        return Checkability(round(p, 4), ok, "NONE" if ok else reason(clean or text))

    def _sentences(self, clean: str) -> list[str]:
        """A longer message's sentences, each judged on its own when the whole was turned away: one factual
        sentence beside a greeting, a question or a call to share is enough to check it."""
        sentences = split_sentences(clean)
        return sentences if len(sentences) > 1 else []

    async def assess(self, text: str) -> Checkability:
        """`text` is the message as the matcher gets it: the same cleaning, so the e5 query vector
        computed here is the one the matcher reuses from the encoder's cache."""
        clean = clean_query(text)
        vec = await self.encoder.queries([clean])
        p = float(self.model.score(self.model.features(vec, [clean]))[0])
        if p < self.model.threshold and (sentences := self._sentences(clean)):
            p = max(p, float(self.model.score(self.model.features(await self.encoder.queries(sentences),
                                                                  sentences)).max()))
        return self._decide(text, clean, p)

    def assess_many(self, texts: list[str]) -> list[Checkability]:
        """Batch form for evaluation (blocking: call it off the event loop)."""
        clean = [clean_query(x) for x in texts]
        probs = self.model.score(self.model.features(self.encoder.queries_sync(clean), clean)) if texts \
            else np.zeros(0)
        out = []
        for x, c, p in zip(texts, clean, probs):
            if p < self.model.threshold and (sentences := self._sentences(c)):
                p = max(p, float(self.model.score(self.model.features(self.encoder.queries_sync(sentences),
                                                                      sentences)).max()))
            out.append(self._decide(x, c, float(p)))
        return out


def not_checkable_result(check_id: str, text: str, language: str, gate: Checkability, notes: list[str],
                         steps: list[Step]) -> Result:
    """The offline NOT_CHECKABLE answer: why, in the message's language, and how sure (1 - p_claim:
    the probability that "no claim" is right)."""
    return Result(id=check_id, text=text, language=language, verdict=Verdict.NOT_CHECKABLE,
                  label=t("label.NOT_CHECKABLE", language), confidence=round(1.0 - gate.p_claim, 3),
                  reasoning=gate.why(language), mode="offline",
                  notes=notes + [t("note.notcheckable_offline", language, pct=round(gate.p_claim * 100))],
                  steps=steps)
