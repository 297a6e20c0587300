"""Intake: whatever a user sent -> clean text, its language, its claims, and whether anything is checkable.

Public API (what the engine and the adapters need):

    from core.intake.message import intake, Intake, EmptyInput      # clean text, URLs, language, length cap
    from core.intake.claims import Claim, split_sentences          # the LLM's claims; sentence splitting
    from core.intake.claim_text import claim_text                  # the claim of a forwarded chat message
    from core.intake.checkability import Checkability              # the offline "anything to check?" gate
    from core.intake.language import detect_language
    from core.intake.ocr import TesseractOcr                       # text from a screenshot
    from core.intake.image_limits import ImageLimits, inspect_image  # header checks before decoding

Modules import what they use directly; this file imports nothing, so importing one module costs what it
cost before the package existed.
"""
