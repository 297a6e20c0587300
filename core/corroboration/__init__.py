"""Corroboration: the same story in other chats ("also reported by"), and what is spreading.

Public API:

    from core.corroboration.corroborator import Corroborator   # the live store: ingest, lookup, retention
    from core.corroboration.story_model import pair_features, story_models   # the fitted same-story model
    from core.corroboration.trends import rank_stories         # digests and /trending
    from core.corroboration.photo_hash import photo_hash       # the same picture in several channels
    from core.corroboration.photo_index import PhotoIndex

corroborator.py applies story_model.py over the persistent store; evals/story_detector.py applies it to
a stream offline, which is how the model is fitted and measured. story_numbers.py gives both the numbers
a retelling keeps.
"""
