"""A fact-check file an admin sends the bot in a private chat: ingested while the bot runs, answered
with the same report as `tipline ingest` (in the admin's language).

Only TIPLINE_ADMINS may, only in a private chat, and only files named .json, .jsonl, .csv or .tsv: any
other file (or the same file from someone else) is an ordinary message, e.g. an image to read. The
platform adapter downloads the file (Telegram lets bots download up to 20 MB) and calls `ingest`.
"""

from __future__ import annotations

from bot.admins import Admins
from bot.ingest_files import ingest_bytes
from core.i18n import t
from core.matching.knowledge_base import KnowledgeBase

SUFFIXES = (".json", ".jsonl", ".csv", ".tsv")
# Telegram's Bot API serves files up to 20 MB to bots (getFile); bigger ones go through the REST API.
MAX_BYTES = 20 * 1024 * 1024


class FactCheckFiles:
    def __init__(self, kb: KnowledgeBase, admins: Admins, *, max_bytes: int = MAX_BYTES):
        self.kb = kb
        self.admins = admins
        self.max_bytes = max_bytes

    def wanted(self, platform: str, user_id: object, private: bool, file_name: str) -> bool:
        """Is this file one to ingest (rather than an ordinary message)?"""
        return private and file_name.lower().endswith(SUFFIXES) and self.admins.is_admin(platform, user_id)

    def too_big(self, name: str, size: int | None, lang: str) -> str | None:
        """The sentence for a file past the download limit, or None."""
        if size is not None and size > self.max_bytes:
            return t("ingest.too_big", lang, name=name, mb=self.max_bytes // 2**20)
        return None

    async def ingest(self, platform: str, name: str, data: bytes, lang: str) -> str:
        """Ingest the file; the reply: what was added, or why nothing was."""
        report = await ingest_bytes(self.kb, f"{platform}:{name}", name, data)
        if report.failed:
            return t("ingest.failed", lang, name=name, error=report.failed)
        text = t("ingest.done", lang, name=name, added=report.added, updated=report.updated, skipped=report.skipped,
                 total=await self.kb.count())
        if report.errors or report.warnings:  # skipped rows, then rows stored unrated
            text += "\n" + "\n".join((report.errors + report.warnings)[:5])
        return text
