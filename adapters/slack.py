"""Slack adapter: events and /check -> `IncomingMessage`/`CheckRequest`, `Reply` -> Block Kit, sending and editing.

The only module that imports `slack_bolt`/`slack_sdk`. It runs slack-bolt's `AsyncApp` in HTTP mode
behind an aiohttp server (`POST /slack/events`); bolt verifies the request signature (signing
secret, 5-minute timestamp window) and answers 401 otherwise. Handlers only translate and hand the
work to the durable queue (bot/queue.py), so Slack gets its 200 at once.

Replies go in the thread of the checked message: a "🔎 Checking…" message is posted there, edited
with `chat.update` as stages finish (throttled), then turned into the verdict card.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Literal
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.card import QUOTE_CHARS, Markup, card
from bot.requests import Addressed, ChatKind, CheckRequest, IncomingMessage
from bot.router import route_direct
from bot.texts import ERROR_TEXT
from bot.chat_app import ChatApp, Ticket
from bot.chat_settings import CHAT_COMMANDS, ChatSettingsRequest, tracked_message
from bot.digest import Digest, StoryAlert, alert_sections, digest_sections, item_lines
from bot.digest_commands import DIGEST_COMMANDS, DigestRequest
from core.i18n import t
from bot.domains import GLOBAL, DomainsRequest
from bot.images import DownloadFailed, ImageRef
from bot.evidence import (EVIDENCE_USAGE, UNKNOWN_CHECK, evidence_arg, evidence_lines,
                          give_feedback, load_check)
from bot.notify import Asker, ReviewNotice, notice_text
from bot.render import AlsoReportedLine, Reply, Reporter
from bot.review import ReviewRequest
from bot.watch_commands import WatchRequest, parse as parse_watch
from core.intake.image_limits import ImageLimits, NotAnImage, mime_is_image
from schema.models import Result

log = logging.getLogger(__name__)

SECTION_LIMIT = 3000  # Block Kit: a section's text
CONTEXT_LIMIT = 2000  # Block Kit: a context element's text
FALLBACK_LIMIT = 4000  # chat.postMessage truncates `text` beyond 40k; keep notifications short

SLACK_USAGE = ("To check a claim, mention me with the text, e.g. "
               "`@tipline The 5G rollout caused the coronavirus outbreak`, "
               "send me a direct message, or use `/check <text>`.")
SLACK_THREAD_USAGE = ("I can't see which message you mean: mention me *with the text to check*, e.g. "
                      "`@tipline The 5G rollout caused the coronavirus outbreak`, or use `/check <text>`.")
SLACK_HELP = (
    "👋 I'm tipline, an open-source fact-checking bot.\n"
    "• Send me a direct message with a claim, or mention me in a channel with the text.\n"
    "• `/check <text>` works anywhere I'm a member.\n"
    "• `/evidence <check id>` (or `evidence <check id>` as a direct message) shows every source, match and "
    "step behind a verdict; the Sources button under a card does the same, 👍 / 👎 tell us if it helped.\n"
    "• Admins: `/domains list`, `/domains allow add <domain>`, `/domains deny add <domain>` "
    "(also as a direct message) manage the trusted and blocked source domains.\n"
    "• The message shortcut *Check this message* (the ⋮ menu of any message) checks that message "
    "and answers in its thread.\n"
    "• Admins: `/review` lists the checks waiting for a person; `/review <check id> <rating> <url>` records "
    "a verdict and tells everyone who asked about that claim.\n"
    "• Admins, in a channel: `/track on|off` stores its messages for a limited time so cards can say which "
    "other channels reported the same story (`/forget` deletes them), `/auto on|off` lets me answer messages "
    "that match a known fact-check, `/stats` shows usage, `/digest on|off|now` and `/trending [hours]` post what "
    "spread in the tracked channels, `/alerts on N` tells you once per false story that reached N of them.\n"
    "• Admins: `/watch add @channel` (or a t.me link) reads a public Telegram channel's posts from its web preview, "
    "so cards and digests count it too (a news outlet's RSS or Atom feed's address works the same way); "
    "`/watch list`, `/watch remove @channel`.\n"
    "I answer in the thread with a verdict, my confidence and the sources. The checked text and the "
    "verdict are stored with a check id so the result can be reviewed, for a limited time; `/forget me` "
    "deletes every check you asked for, your votes and your messages in tracked channels. Verdicts are "
    "automatic and can be wrong: always read the sources."
)
SHORTCUT_CHECK = "tipline_check_message"  # the message shortcut's callback id (README: Slack setup)
NOTHING_TO_CHECK = "There's no text in that message I can check."
SLACK_INFO = {"start": SLACK_HELP, "help": SLACK_HELP, "usage": SLACK_USAGE}


@dataclass(frozen=True)
class SlackConfig:
    bot_token: str
    signing_secret: str
    api_url: str | None = None  # e.g. "http://127.0.0.1:PORT/api/" (trailing slash); None = slack.com
    host: str = "127.0.0.1"
    port: int = 8080  # 0 = any free port (tests); the bound port is `SlackBot.port`
    path: str = "/slack/events"


# ---------------------------------------------------------------------------------------------
# Translation: Slack -> plain text / IncomingMessage

_SLACK_TOKEN = re.compile(r"<([^<>]*)>")


LinkStyle = Literal["both", "label", "url"]


def slack_to_plain(text: str, bot_user_id: str | None = None, *, links: LinkStyle = "both") -> str:
    """Slack message markup -> the text a person sees; mentions of the bot are dropped.

    `<@U1|name>` -> `@name`, `<#C1|general>` -> `#general`, `<!here>` -> `@here`; a link `<url|label>`
    -> `label (url)` (`links="both"`, a message to check), `label` (`"label"`: an auto-linked domain
    in /domains is the domain) or `url` (`"url"`: /review wants the URL itself); then
    `&lt; &gt; &amp;` are unescaped (what users typed literally).
    """
    def token(m: re.Match[str]) -> str:
        body = m[1]
        target, _, label = body.partition("|")
        if links != "both":
            if links == "url" and target.lower().startswith(("http://", "https://")):
                return target
            return label or target
        if target.startswith("@"):
            if bot_user_id and target[1:] == bot_user_id:
                return " "
            return "@" + (label or target[1:])
        if target.startswith("#"):
            return "#" + (label or target[1:])
        if target.startswith("!"):
            if label:
                return label
            name = target[1:].split("^", 1)[0]
            return "@" + name
        if label and label != target:
            return f"{label} ({target})"
        return target

    plain = _SLACK_TOKEN.sub(token, text or "")
    return plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _kind(event: dict[str, Any]) -> ChatKind:
    return "private" if event.get("channel_type") == "im" else "group"


def image_of(message: dict[str, Any]) -> ImageRef | None:
    """The file shared with a message (`file_share`, or a mention with an upload): the first image, else
    the first file (its type decides later whether it is read or refused with a sentence)."""
    files = [f for f in message.get("files") or () if isinstance(f, dict) and f.get("id")]
    if not files:
        return None
    f = next((f for f in files if str(f.get("mimetype", "")).startswith("image/")), files[0])
    size = f.get("size")
    return ImageRef("slack", str(f["id"]), mime=str(f.get("mimetype") or ""),
                    size=size if isinstance(size, int) else None, name=str(f.get("name") or ""))


def to_incoming(event: dict[str, Any], bot_user_id: str | None = None) -> IncomingMessage:
    return IncomingMessage(
        platform="slack", chat_id=event.get("channel", ""), chat_kind=_kind(event),
        message_id=event.get("ts", ""), text=slack_to_plain(event.get("text", ""), bot_user_id),
        thread_id=event.get("thread_ts"), sender_id=event.get("user"), raw=event, image=image_of(event),
    )


class SlackImageFetcher:
    """A shared file's bytes: files.info (scope files:read) for its url_private, then that URL with the bot
    token, read in chunks and cut off past the size limit. The token is only ever sent to Slack's own
    file hosts (or the configured API's host: a test server)."""

    def __init__(self, client: AsyncWebClient, token: str, api_url: str | None = None, *, timeout_s: float = 30.0):
        self.client = client
        self.token = token
        self.hosts = {urlsplit(api_url).hostname} if api_url else set()
        self.timeout_s = timeout_s

    def _trusted(self, url: str) -> bool:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if host in self.hosts:
            return parts.scheme in ("http", "https")
        return parts.scheme == "https" and (host == "slack.com" or host.endswith(".slack.com"))

    async def fetch(self, ref: ImageRef, max_bytes: int) -> bytes:
        limits = ImageLimits(max_bytes=max_bytes)
        info = (await self.client.files_info(file=ref.file_id)).get("file") or {}
        limits.refuse_size(info.get("size") if isinstance(info.get("size"), int) else None)
        if not mime_is_image(str(info.get("mimetype") or "")):
            raise NotAnImage(f"Slack says {info.get('mimetype')!r}")
        url = str(info.get("url_private_download") or info.get("url_private") or "")
        if not self._trusted(url):
            raise DownloadFailed(f"not a Slack file URL: {url[:100]!r}")
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        async with aiohttp.ClientSession(timeout=timeout) as session, \
                session.get(url, headers={"Authorization": f"Bearer {self.token}"}) as resp:
            if resp.status != 200 or resp.content_type == "text/html":  # a sign-in page: the token was refused
                raise DownloadFailed(f"HTTP {resp.status} {resp.content_type} for file {ref.file_id}")
            limits.refuse_size(resp.content_length)
            data = bytearray()
            async for chunk in resp.content.iter_chunked(64 * 1024):
                data += chunk
                limits.refuse_size(len(data))
        return bytes(data)


_HANDLED_SUBTYPES = {None, "file_share", "thread_broadcast"}


def is_ignored(event: dict[str, Any], bot_user_id: str | None = None) -> bool:
    """Bots (including this one), edits, deletions, joins, … are never checked."""
    if event.get("bot_id") or event.get("bot_profile") or event.get("subtype") == "bot_message":
        return True
    if event.get("subtype") not in _HANDLED_SUBTYPES:
        return True
    return bool(bot_user_id) and event.get("user") == bot_user_id


# ---------------------------------------------------------------------------------------------
# Rendering: Reply -> Block Kit + mrkdwn fallback


def esc(text: object) -> str:
    """mrkdwn-escape user/web text: `&`, `<`, `>` (so no mention, channel ping or link can be formed)."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


_URL_OK = re.compile(r"^https?://[^\s<>|]+$", re.IGNORECASE)


def safe_url(url: str | None) -> str | None:
    """An http(s) URL usable inside `<url|title>`, or None."""
    if not url:
        return None
    url = url.strip().replace("|", "%7C").replace(">", "%3E").replace("<", "%3C").replace(" ", "%20")
    if not _URL_OK.match(url):
        return None
    return url.replace("&", "&amp;")


def link(url: str | None, title: str | None, limit: int = 200) -> str:
    label = esc(_clip((title or url or "").replace("|", "¦").replace("\n", " ").strip(), limit))
    target = safe_url(url)
    if target is None:
        return label
    return f"<{target}|{label or target}>"


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, SECTION_LIMIT), "verbatim": True}}


def _context(*texts: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(t, CONTEXT_LIMIT), "verbatim": True}
                                            for t in texts[:10]]}


ACTION_SOURCES = "tipline_sources"
ACTION_UP = "tipline_fb_up"
ACTION_DOWN = "tipline_fb_down"
EVIDENCE_BLOCKS = 20  # sections per evidence message (Block Kit allows 50)


def actions_block(check_id: str) -> dict[str, Any]:
    """Sources / 👍 / 👎 under a verdict card; each button's value is the check id."""
    def button(action_id: str, label: str) -> dict[str, Any]:
        return {"type": "button", "action_id": action_id, "value": check_id,
                "text": {"type": "plain_text", "text": label, "emoji": True}}
    return {"type": "actions", "block_id": "tipline_card_actions",
            "elements": [button(ACTION_SOURCES, "Sources"), button(ACTION_UP, "👍"), button(ACTION_DOWN, "👎")]}


def render_evidence(result: Result) -> list[tuple[list[dict[str, Any]], str]]:
    """The full evidence view of a stored check: [(blocks, fallback text)], one per message.

    Lines are packed into sections under SECTION_LIMIT (a longer line is clipped), sections into
    messages of at most EVIDENCE_BLOCKS blocks.
    """
    lines = evidence_lines(result, MRKDWN_LONG)
    sections: list[str] = []
    cur = ""
    for line in lines:
        line = _clip(line, SECTION_LIMIT) if len(line) > SECTION_LIMIT else line
        candidate = f"{cur}\n{line}" if cur else line
        if len(candidate) > SECTION_LIMIT:
            sections.append(cur)
            cur = line
        else:
            cur = candidate
    if cur.strip():
        sections.append(cur)
    chunks = [sections[i:i + EVIDENCE_BLOCKS] for i in range(0, len(sections), EVIDENCE_BLOCKS)]
    out = []
    for n, chunk in enumerate(chunks, 1):
        part = f" (part {n}/{len(chunks)})" if len(chunks) > 1 else ""
        out.append(([_section(t) for t in chunk if t.strip()], f"Evidence for check {esc(result.id)}{part}"))
    return out


_CONTEXT = {"quote", "reported", "aside", "notes", "footer"}


def render_blocks(reply: Reply, request: CheckRequest | None = None,
                  requester: str | None = None, *, buttons: bool = True) -> tuple[list[dict[str, Any]], str]:
    """(blocks, fallback text): the verdict card (bot/card.py) as Block Kit. Everything from users or the
    web is escaped."""
    blocks: list[dict[str, Any]] = []
    sections = card(reply, MRKDWN, request)
    for section in sections:
        texts = [line.text for line in section.lines]
        if section.kind == "quote" or not texts:
            continue  # the checked text is drawn under the headline, with who asked
        if section.kind in _CONTEXT:
            blocks.append(_context(*texts[:9]))
        else:
            blocks.append(_section("\n".join(([section.heading] if section.heading else []) + texts)))
        if section.kind == "headline":
            # the checked text and the text read from an image, each quoted short
            checked = " · ".join(line.text for s in sections if s.kind == "quote" for line in s.lines)
            if requester and re.fullmatch(r"[UW][A-Z0-9]{2,20}", requester):
                checked = (checked + " · " if checked else "") + f"asked by <@{requester}>"
            if checked:
                blocks.append(_context(checked))
    if buttons:
        blocks.append(actions_block(reply.check_id))

    fallback = [esc(reply.headline)]
    if request is not None and request.text.strip():
        fallback.append(reply.t("card.checked", text=esc(_clip(' '.join(request.text.split()), QUOTE_CHARS))))
    if reply.image_text:
        fallback.append(reply.t("card.image_text", text=esc(_clip(' '.join(reply.image_text.split()), QUOTE_CHARS))))
    if reply.reasoning:
        fallback.append(esc(reply.reasoning))
    fallback.append(f"{esc(reply.t('card.check_id'))}: {esc(reply.check_id)}")
    return blocks, _clip("\n".join(fallback), FALLBACK_LIMIT)


_SLACK_CHANNEL_ID = re.compile(r"[CG][A-Z0-9]{2,20}")


def _reporter_mrkdwn(r: Reporter) -> str:
    # A Slack channel is shown by Slack itself (<#C123> renders its name, for members a link); other
    # platforms' chats are linked to their message where there is an http(s) permalink.
    if r.platform == "slack" and _SLACK_CHANNEL_ID.fullmatch(r.chat_id or ""):
        return f"<#{r.chat_id}>"
    return link(r.link, r.name) if r.link else esc(r.name)


MRKDWN = Markup(text=esc, bold=lambda t: f"*{t}*", italic=lambda t: f"_{t}_", link=link,
                code=lambda t: f"`{t}`", reporter=_reporter_mrkdwn, claim_chars=300)
MRKDWN_LONG = replace(MRKDWN, link=lambda u, t: link(u, t, 300))  # the evidence view and notices


def also_reported_mrkdwn(line: AlsoReportedLine) -> str:
    return line.text(name=MRKDWN.name, outlet=esc)


# ---------------------------------------------------------------------------------------------
# Sending


class SlackResponder:
    """Replies to one checked message in its thread: progress posted once, then edited in place.

    With `show_progress=False` (slash commands, already acknowledged ephemerally) nothing is posted
    until the verdict.
    """

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str | None = None, *,
                 show_progress: bool = True, requester: str | None = None, response_url: str | None = None,
                 job: int | None = None):
        self.client = client
        # The queue job this answers: its first message carries it as message metadata, so after a crash
        # the resumed job finds that message (SlackResponderFactory.find_reply) instead of posting again.
        self.job = job
        self.channel = channel
        self.thread_ts = thread_ts
        self.show_progress = show_progress
        self.requester = requester
        # A slash command's or shortcut's response_url: where to answer the user privately when the
        # bot cannot post in the channel (it is not a member), instead of failing silently.
        self.response_url = response_url
        self.ephemeral = False  # set once a post was refused: every later answer goes to response_url
        self.ts: str | None = None

    async def _put(self, text: str, blocks: list[dict[str, Any]] | None = None) -> None:
        if self.ephemeral:
            await respond_ephemeral(self.response_url or "", text, blocks)
            return
        if self.ts is None:
            kw: dict[str, Any] = dict(channel=self.channel, text=text, unfurl_links=False, unfurl_media=False)
            if self.thread_ts:
                kw["thread_ts"] = self.thread_ts
            if blocks is not None:
                kw["blocks"] = blocks
            if self.job is not None:
                kw["metadata"] = {"event_type": REPLY_EVENT, "event_payload": {"job": str(self.job)}}
            try:
                resp = await self.client.chat_postMessage(**kw)
            except SlackApiError as exc:
                if not self.response_url or exc.response.get("error") not in NOT_A_MEMBER:
                    raise
                log.info("slack: not a member of %s; answering the user ephemerally", self.channel)
                self.ephemeral = True
                await respond_ephemeral(self.response_url, text, blocks)
                return
            self.ts = resp["ts"]
            self.channel = resp.get("channel") or self.channel
        else:
            kw = dict(channel=self.channel, ts=self.ts, text=text)
            # An edit without blocks keeps the old ones: send [] to clear them.
            kw["blocks"] = blocks if blocks is not None else []
            await self.client.chat_update(**kw)

    async def progress(self, text: str) -> None:
        # Answering ephemerally, progress is not shown again: every response_url use is a new message
        # (and Slack allows five), so the user sees "Checking…" once and then the verdict.
        if self.show_progress and not self.ephemeral:
            await self._put(esc(text))

    async def say(self, text: str) -> None:
        await self._put(text)  # our own fixed texts (they use mrkdwn on purpose)

    async def answer(self, text: str) -> None:
        await self._put(esc(text))  # a command's answer carries user input (domains, ids)

    async def evidence(self, result: Result) -> None:
        for blocks, text in render_evidence(result):
            await self.post_new(text, blocks)

    async def post_new(self, text: str, blocks: list[dict[str, Any]]) -> None:
        """A new message in the thread (never an edit)."""
        kw: dict[str, Any] = dict(channel=self.channel, text=text, blocks=blocks, unfurl_links=False,
                                  unfurl_media=False)
        if self.thread_ts:
            kw["thread_ts"] = self.thread_ts
        await self.client.chat_postMessage(**kw)

    async def final(self, reply: Reply, request: CheckRequest | None = None) -> None:
        blocks, text = render_blocks(reply, request, self.requester)
        await self._put(text, blocks)


# Message metadata on a job's first reply (https://docs.slack.dev/messaging/message-metadata).
REPLY_EVENT = "tipline_reply"
# A resumed job looks this far back: its reply came right after the asker's message, and a crash leaves
# only seconds between them.
FIND_REPLY_LIMIT = 100
FIND_REPLY_PAGES = 10

ACTION_DIGEST_CHECK = "tipline_digest_check"  # a digest item's "Check #n" button; its value is the message key


def render_digest(digest: Digest) -> tuple[list[dict[str, Any]], str]:
    """(blocks, fallback text): the digest (bot/digest.py) as Block Kit, a "Check #n" button under each
    item without a verdict (one actions block per item: action ids need only be unique within a block)."""
    sections = digest_sections(digest, MRKDWN)
    blocks: list[dict[str, Any]] = [_section(sections[0].lines[0].text)]
    if not digest.items:
        blocks.append(_section("\n".join(line.text for line in sections[1].lines)))
    for n, item in enumerate(digest.items, 1):
        blocks.append(_section("\n".join(line.text for line in item_lines(n, item, digest.hours, digest.lang,
                                                                          MRKDWN))))
        if item.match is None:
            blocks.append({"type": "actions", "block_id": f"tipline_digest_{n}", "elements": [
                {"type": "button", "action_id": ACTION_DIGEST_CHECK, "value": item.check_key[:2000],
                 "text": {"type": "plain_text", "text": t("digest.check_button", digest.lang, n=n), "emoji": True}}]})
    if digest.items:
        blocks.append(_context(*(line.text for line in sections[-1].lines)))
    fallback = t("digest.title", digest.lang, hours=digest.hours)
    return blocks, _clip(esc(fallback), FALLBACK_LIMIT)


class SlackDigestPoster:
    """Posts digests and alerts (bot/digest_schedule.py) as new messages in a channel (or a thread)."""

    def __init__(self, client: AsyncWebClient):
        self.client = client

    async def _post(self, channel: str, thread_ts: str | None, text: str, blocks: list[dict[str, Any]]) -> None:
        kw: dict[str, Any] = dict(channel=channel, text=text, blocks=blocks, unfurl_links=False, unfurl_media=False)
        if thread_ts:
            kw["thread_ts"] = thread_ts
        await self.client.chat_postMessage(**kw)

    async def post_digest(self, chat_id: str, thread_id: str | None, digest: Digest,
                          reply_to: str | None = None) -> None:
        blocks, text = render_digest(digest)
        await self._post(chat_id, thread_id, text, blocks)

    async def post_alert(self, chat_id: str, thread_id: str | None, alert: StoryAlert) -> None:
        sections = alert_sections(alert, MRKDWN)
        head = sections[0].lines[0].text
        await self._post(chat_id, thread_id, _clip(head, FALLBACK_LIMIT),
                         [_section(head), _section("\n".join(line.text for line in sections[1].lines))])


NOT_A_MEMBER = {"not_in_channel", "channel_not_found"}  # chat.postMessage where the bot is not a member


async def respond_ephemeral(response_url: str, text: str, blocks: list[dict[str, Any]] | None = None) -> None:
    """Answer only the user who invoked a slash command or shortcut, through its response_url
    (valid 30 minutes, up to 5 uses); raises if Slack refuses it."""
    resp = await AsyncWebhookClient(response_url).send(text=text, blocks=blocks, response_type="ephemeral",
                                                      unfurl_links=False, unfurl_media=False)
    if resp.status_code != 200:
        raise RuntimeError(f"response_url answered {resp.status_code}: {resp.body[:200]!r}")


class SlackNotifier:
    """Sends a review notice (bot/notify.py) to an asker in the thread of the checked message (or of
    the card, for a /check answered outside a thread), mentioning them so Slack tells them."""

    def __init__(self, client: AsyncWebClient):
        self.client = client

    async def notify(self, asker: Asker, notice: ReviewNotice) -> None:
        where = asker.where
        text = notice_text(notice, MRKDWN_LONG)
        requester = str(where.get("requester") or asker.requested_by or "")
        if re.fullmatch(r"[UW][A-Z0-9]{2,20}", requester):
            text = f"<@{requester}> {text}"
        kw: dict[str, Any] = dict(channel=where["channel"], text=_clip(text, FALLBACK_LIMIT), blocks=[_section(text)],
                                  unfurl_links=False, unfurl_media=False)
        thread = where.get("thread_ts") or asker.reply_ref
        if thread:
            kw["thread_ts"] = thread
        await self.client.chat_postMessage(**kw)


class SlackResponderFactory:
    """Rebuilds a `SlackResponder` from a job's `where` (bot/queue.py); the reply ref is the message ts."""

    def __init__(self, client: AsyncWebClient):
        self.client = client

    @staticmethod
    def where(responder: SlackResponder) -> dict[str, Any]:
        return {"channel": responder.channel, "thread_ts": responder.thread_ts,
                "show_progress": responder.show_progress, "requester": responder.requester,
                "response_url": responder.response_url}

    def build(self, where: Any, reply_ref: str | None) -> SlackResponder:
        responder = SlackResponder(self.client, where["channel"], where.get("thread_ts"),
                                   show_progress=where.get("show_progress", True), requester=where.get("requester"),
                                   response_url=where.get("response_url"), job=where.get("job"))
        responder.ts = reply_ref  # edit the reply already posted, if any
        return responder

    def reply_ref(self, responder: Any) -> str | None:
        return getattr(responder, "ts", None)

    async def find_reply(self, where: Any) -> str | None:
        """The message this job posted before a crash, by the job mark in its metadata: the thread's replies
        (or the channel's latest messages, for an answer outside a thread), read with
        `include_all_metadata`. Needs the `*:history` scope of the conversation; without it, None."""
        job, channel, thread = where.get("job"), where["channel"], where.get("thread_ts")
        if job is None:
            return None
        cursor: str | None = None
        for _ in range(FIND_REPLY_PAGES):  # a thread's replies come oldest first: a long thread takes pages
            try:
                if thread:
                    resp = await self.client.conversations_replies(
                        channel=channel, ts=thread, include_all_metadata=True, limit=FIND_REPLY_LIMIT, cursor=cursor)
                else:  # newest first: the reply is on the first page
                    resp = await self.client.conversations_history(channel=channel, include_all_metadata=True,
                                                                   limit=FIND_REPLY_LIMIT)
            except SlackApiError as exc:
                log.warning("slack: could not read %s to find job %s's reply (%s)", channel, job,
                            exc.response.get("error"))
                return None
            for m in resp.get("messages") or []:
                meta = m.get("metadata") or {}
                if meta.get("event_type") == REPLY_EVENT and str((meta.get("event_payload") or {}).get("job")) == str(job):
                    return str(m["ts"])
            cursor = (resp.get("response_metadata") or {}).get("next_cursor") or None
            if not thread or not cursor:
                return None
        return None


WORKING_REACTION = "eyes"


class SlackPresence:
    """bot/progress_delay.py's "working on it" sign: an :eyes: reaction on the asker's message while the
    check runs, removed once the answer is posted. `already_reacted` / `no_reaction` mean it is already
    as wanted (a resumed job adds it again), so both calls are idempotent. Slash commands answer
    ephemerally (`show_progress` off) and have no message to react to."""

    refresh_s: float | None = None  # a reaction stays: added once

    def __init__(self, client: AsyncWebClient):
        self.client = client
        # An app installed before reactions:write was in the manifest answers `missing_scope` to every
        # call: say so once and stop trying, instead of a failed call and a warning per check.
        self.enabled = True

    def _target(self, req: CheckRequest, where: Mapping[str, Any]) -> dict[str, str] | None:
        if not self.enabled or not where.get("show_progress", True) or not req.target_id:
            return None
        return {"channel": str(req.chat_id), "timestamp": str(req.target_id), "name": WORKING_REACTION}

    async def show(self, req: CheckRequest, where: Mapping[str, Any]) -> None:
        await self._react(self.client.reactions_add, "already_reacted", req, where)

    async def clear(self, req: CheckRequest, where: Mapping[str, Any]) -> None:
        await self._react(self.client.reactions_remove, "no_reaction", req, where)

    async def _react(self, call: Any, done: str, req: CheckRequest, where: Mapping[str, Any]) -> None:
        """reactions.add/remove, where Slack's `done` error means it already is as asked (idempotent)."""
        if (target := self._target(req, where)) is not None:
            try:
                await call(**target)
            except SlackApiError as exc:
                if exc.response.get("error") != done and not self._unscoped(exc):
                    raise

    def _unscoped(self, exc: SlackApiError) -> bool:
        if exc.response.get("error") != "missing_scope":
            return False
        if self.enabled:
            log.warning("slack: the app lacks the reactions:write scope, so no :eyes: while checking; add it "
                        "(deploy/slack-app-manifest.yml) and reinstall the app")
        self.enabled = False
        return True


# ---------------------------------------------------------------------------------------------
# Application wiring


class SlackBot:
    """A bolt `AsyncApp` behind an aiohttp server; every check goes through the durable queue."""

    def __init__(self, config: SlackConfig, chat: ChatApp):
        self.config = config
        self.chat = chat
        client_kw: dict[str, Any] = {"token": config.bot_token}
        if config.api_url:
            client_kw["base_url"] = config.api_url
        self.client = AsyncWebClient(**client_kw)
        self.client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=2))  # HTTP 429
        # Bolt answers Slack only after the listener returned, i.e. after the check is persisted
        # (listeners only persist or spawn, so the ack still comes in milliseconds).
        self.app = AsyncApp(client=self.client, signing_secret=config.signing_secret, name="tipline",
                            process_before_response=True)
        chat.register("slack", responders=SlackResponderFactory(self.client), notifier=SlackNotifier(self.client),
                      info=SLACK_INFO, poster=SlackDigestPoster(self.client),
                      images=SlackImageFetcher(self.client, config.bot_token, config.api_url),
                      presence=SlackPresence(self.client))
        self.app.event("app_mention")(self._on_mention)
        self.app.event("message")(self._on_message)
        self.app.command("/check")(self._on_check_command)
        self.app.command("/domains")(self._on_domains_command)
        self.app.command("/evidence")(self._on_evidence_command)
        self.app.command("/review")(self._on_review_command)
        self.app.command("/watch")(self._on_watch_command)
        self.app.shortcut(SHORTCUT_CHECK)(self._on_check_shortcut)
        for name in CHAT_COMMANDS:
            self.app.command(f"/{name}")(self._on_chat_command)
        self.app.action(ACTION_SOURCES)(self._on_sources)
        self.app.action(ACTION_UP)(self._on_vote)
        self.app.action(ACTION_DOWN)(self._on_vote)
        for digest_command in DIGEST_COMMANDS:
            self.app.command(f"/{digest_command}")(self._on_digest_command)
        self.app.action(ACTION_DIGEST_CHECK)(self._on_digest_check)
        self.app.error(self._on_error)
        self._seen: OrderedDict[str, None] = OrderedDict()  # event ids, against Slack's retries
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    # --- HTTP --------------------------------------------------------------------------------

    def web_app(self) -> web.Application:
        web_app = web.Application()
        web_app.router.add_post(self.config.path, self._handle_http)
        return web_app

    async def _handle_http(self, request: web.Request) -> web.Response:
        if not _signature_headers_well_formed(request.headers):
            # slack_sdk's verifier raises (int() of the timestamp) on a malformed header: a 500 before
            # this check. A request that cannot even be verified is unauthorised.
            return web.Response(status=401, text="invalid request signature headers")
        bolt_req = await to_bolt_request(request)
        bolt_resp = await self.app.async_dispatch(bolt_req)
        return await to_aiohttp_response(bolt_resp)

    async def start(self) -> None:
        self._runner = web.AppRunner(self.web_app(), shutdown_timeout=5.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.host, self.config.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        log.info("slack: listening on http://%s:%s%s", self.config.host, self.port, self.config.path)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.chat.aclose()  # the checks and commands already running finish (shared: idempotent)

    async def run_forever(self, stop: asyncio.Event | None = None) -> None:
        await self.start()
        try:
            await (stop or asyncio.Event()).wait()
        finally:
            await self.stop()

    # --- listeners ---------------------------------------------------------------------------

    def _first_time(self, body: dict[str, Any]) -> bool:
        event_id = body.get("event_id")
        if not event_id:
            return True
        if event_id in self._seen:
            return False
        self._seen[event_id] = None
        while len(self._seen) > 1000:
            self._seen.popitem(last=False)
        return True

    def _say(self, responder: SlackResponder, text: str) -> None:
        async def say() -> None:
            try:
                await responder.say(text)
            except Exception:
                log.exception("slack: could not answer in %s", responder.channel)
        self.chat.service.spawn(say(), name="tipline-slack-say")

    def _receive(self, body: dict[str, Any], event: dict[str, Any], context: Any,
                 client: Any) -> tuple[IncomingMessage, str, SlackResponder] | None:
        """The message, its thread root and a responder in that thread; None for what we ignore
        (ourselves, other bots, edits, Slack's retries of an event already taken)."""
        bot_user_id = context.bot_user_id
        if is_ignored(event, bot_user_id) or not self._first_time(body):
            return None
        msg = to_incoming(event, bot_user_id)
        thread_ts = str(event.get("thread_ts") or event.get("ts") or "")
        return msg, thread_ts, SlackResponder(client, str(msg.chat_id), thread_ts)

    async def _on_mention(self, body: dict[str, Any], event: dict[str, Any], context: Any, client: Any) -> None:
        received = self._receive(body, event, context, client)
        if received is None:
            return
        msg, thread_ts, responder = received
        text = msg.text.strip()
        if not text and msg.image is None:
            self._say(responder, SLACK_THREAD_USAGE if event.get("thread_ts") else SLACK_USAGE)
            return
        req = CheckRequest(text=text, chat_id=msg.chat_id, target_id=msg.message_id, thread_id=thread_ts,
                           requested_by=msg.sender_id, image=msg.image)
        await self._dispatch(body, req, responder)

    async def _on_message(self, body: dict[str, Any], event: dict[str, Any], context: Any, client: Any) -> None:
        if event.get("channel_type") != "im":
            # Channel messages are checked only as @mentions (app_mention); here they are only stored
            # (tracked channels) or, with /auto on, checked silently.
            if not is_ignored(event, context.bot_user_id) and self._first_time(body):
                self.chat.service.spawn(self._observe(event, context.bot_user_id, client), name="tipline-slack-observe")
            return
        received = self._receive(body, event, context, client)
        if received is None:
            return
        msg, thread_ts, responder = received
        msg = replace(msg, thread_id=thread_ts)  # every answer in a DM goes in the message's thread
        # Commands come without a slash in DMs, and never name the bot (`/check@name` is Telegram's); a
        # domain Slack auto-linked counts as its label.
        action = route_direct(msg, slack_to_plain(event.get("text", ""), links="label"))
        if action is None:
            return
        await self._dispatch(body, action, responder)

    async def _on_check_command(self, ack: Any, command: dict[str, Any], client: Any) -> None:
        text = slack_to_plain(command.get("text", "")).strip()
        if not text:
            await ack(text=SLACK_USAGE, response_type="ephemeral")
            return
        await ack(text="🔎 Checking…", response_type="ephemeral")
        channel = command.get("channel_id", "")
        user = command.get("user_id")
        responder = SlackResponder(client, channel, None, show_progress=False, requester=user,
                                   response_url=command.get("response_url") or None)
        req = CheckRequest(text=text, chat_id=channel, target_id=command.get("trigger_id", ""), requested_by=user)
        await self._dispatch({"event_id": f"cmd:{command.get('trigger_id', '')}"}, req, responder)

    async def _on_check_shortcut(self, ack: Any, body: dict[str, Any], context: Any, client: Any) -> None:
        """The message shortcut "Check this message": check that message, answer in its thread.
        Acked at once (Slack allows 3 s); bolt answers the request after the job is persisted."""
        await ack()
        if body.get("type") != "message_action":
            return  # a global shortcut with our callback id has no message to check
        message = body.get("message") or {}
        channel = (body.get("channel") or {}).get("id", "")
        user = (body.get("user") or {}).get("id")
        ts = str(message.get("ts") or body.get("message_ts") or "")
        thread_ts = message.get("thread_ts") or ts
        responder = SlackResponder(client, channel, thread_ts, requester=user,
                                   response_url=body.get("response_url") or None)
        text = slack_to_plain(message.get("text", ""), context.bot_user_id).strip()
        image = image_of(message)
        if not text and image is None:
            async def usage() -> None:
                try:
                    await self._tell(client, channel, user, body.get("response_url"), NOTHING_TO_CHECK)
                except Exception:
                    log.exception("slack: could not answer the shortcut in %s", channel)
            self.chat.service.spawn(usage(), name="tipline-slack-shortcut-usage")
            return
        req = CheckRequest(text=text, chat_id=channel, target_id=ts, thread_id=thread_ts, requested_by=user,
                           image=image)
        await self._dispatch({"event_id": f"shortcut:{body.get('trigger_id') or channel + ':' + ts}"},
                                   req, responder)

    @staticmethod
    async def _tell(client: Any, channel: str, user: str | None, response_url: str | None, text: str) -> None:
        """A private answer to `user`: through the response_url when there is one (works in channels the
        bot is not in), else chat.postEphemeral."""
        if response_url:
            await respond_ephemeral(response_url, text)
        else:
            await client.chat_postEphemeral(channel=channel, user=user or "", text=text)

    async def _on_review_command(self, ack: Any, command: dict[str, Any], client: Any) -> None:
        """`/review` (configured admins): the queue, or `/review <id> <rating> <url>` to record a verdict,
        answered ephemerally. Recording (embedding, notifying the askers) can outlast Slack's 3 s, so a
        verdict is acked at once and the outcome follows through the response_url."""
        req = ReviewRequest(platform="slack", chat_id=command.get("channel_id", ""),
                            target_id=command.get("trigger_id", ""), user_id=command.get("user_id"),
                            args=slack_to_plain(command.get("text", ""), links="url").strip())
        if not req.args or not self.chat.review.is_admin("slack", req.user_id):
            await ack(text=esc(await self.chat.answer(req)), response_type="ephemeral")
            return
        await ack(text="⏳ Recording the verdict…", response_type="ephemeral")

        async def record() -> None:
            answer = await self.chat.answer(req)
            try:
                # Slack's ids are strings; ReviewRequest's fields are widened for Telegram's integers.
                user = None if req.user_id is None else str(req.user_id)
                await self._tell(client, str(req.chat_id), user, command.get("response_url"), esc(answer))
            except Exception:
                log.exception("slack: could not answer /review in %s", req.chat_id)
        self.chat.service.spawn(record(), name="tipline-slack-review")

    @staticmethod
    def _ticket(body: dict[str, Any], req: Addressed, responder: SlackResponder) -> Ticket:
        """The idempotency key is the event id, the same in every retry Slack sends (X-Slack-Retry-Num),
        so a retry finds the job and nothing is answered twice."""
        event_id = str(body.get("event_id") or "")
        return Ticket(f"slack:{event_id or str(req.chat_id) + ':' + str(req.target_id)}", "slack",
                      SlackResponderFactory.where(responder))

    async def _dispatch(self, body: dict[str, Any], action: Addressed, responder: SlackResponder) -> None:
        """Hand a request to the chat app: a check is persisted before bolt acks the request. If persisting
        fails the event id is forgotten again and the error propagates: Slack gets a 500 and retries."""
        try:
            await self.chat.dispatch("slack", action, responder, ticket=self._ticket(body, action, responder))
        except Exception:
            self._seen.pop(str(body.get("event_id") or ""), None)
            raise

    async def _on_evidence_command(self, ack: Any, command: dict[str, Any], client: Any) -> None:
        """`/evidence <id>`: the first message in the ack (ephemeral), any further parts as ephemeral posts."""
        check_id = evidence_arg(slack_to_plain(command.get("text", "")))
        result = await load_check(self.chat.db, check_id) if check_id else None
        if result is None:
            await ack(text=esc(UNKNOWN_CHECK if check_id else EVIDENCE_USAGE), response_type="ephemeral")
            return
        messages = render_evidence(result)
        blocks, text = messages[0]
        await ack(text=text, blocks=blocks, response_type="ephemeral")
        for blocks, text in messages[1:]:
            try:
                await client.chat_postEphemeral(channel=command.get("channel_id", ""),
                                                user=command.get("user_id", ""), text=text, blocks=blocks)
            except Exception:
                log.exception("slack: could not post the rest of the evidence of %s", check_id)

    @staticmethod
    def _action_place(body: dict[str, Any]) -> tuple[str, str | None, str, str]:
        """(channel, thread ts, user, check id) of a block_actions payload."""
        container = body.get("container") or {}
        message = body.get("message") or {}
        channel = (body.get("channel") or {}).get("id") or container.get("channel_id", "")
        thread_ts = message.get("thread_ts") or container.get("thread_ts") or message.get("ts") \
            or container.get("message_ts")
        action = (body.get("actions") or [{}])[0]
        return channel, thread_ts, (body.get("user") or {}).get("id", ""), str(action.get("value", ""))

    async def _on_sources(self, ack: Any, body: dict[str, Any], client: Any) -> None:
        await ack()
        channel, thread_ts, _, check_id = self._action_place(body)
        responder = SlackResponder(client, channel, thread_ts)
        self.chat.service.spawn(self.chat.evidence(check_id, responder), name="tipline-slack-sources")

    async def _on_vote(self, ack: Any, body: dict[str, Any], client: Any) -> None:
        await ack()
        channel, thread_ts, user, check_id = self._action_place(body)
        action_id = (body.get("actions") or [{}])[0].get("action_id")
        try:
            answer = await give_feedback(self.chat.db, check_id, "slack", user, 1 if action_id == ACTION_UP else -1)
        except Exception:
            log.exception("slack: could not store feedback on %r", check_id)
            answer = ERROR_TEXT
        kw: dict[str, Any] = dict(channel=channel, user=user, text=esc(answer))
        if thread_ts:
            kw["thread_ts"] = thread_ts
        try:
            await client.chat_postEphemeral(**kw)
        except Exception:
            log.exception("slack: could not answer the vote on %r", check_id)

    async def _on_domains_command(self, ack: Any, command: dict[str, Any]) -> None:
        """`/domains …`: global rules, configured admins only; answered ephemerally in the ack."""
        req = DomainsRequest(platform="slack", chat_id=command.get("channel_id", ""),
                             target_id=command.get("trigger_id", ""), user_id=command.get("user_id"),
                             scope=GLOBAL, args=slack_to_plain(command.get("text", ""), links="label").strip())
        await ack(text=esc(await self.chat.answer(req)), response_type="ephemeral")

    async def _observe(self, event: dict[str, Any], bot_user_id: str | None, client: Any) -> None:
        msg = to_incoming(event, bot_user_id)
        text = msg.text.strip()
        if not text:
            return
        ts = str(event.get("ts", ""))
        at = datetime.fromtimestamp(float(ts), timezone.utc) if ts else datetime.now(timezone.utc)
        tracked = tracked_message("slack", msg.chat_id, ts, text, at, author=f"#{msg.chat_id}", kind="group")
        thread_ts = event.get("thread_ts") or event.get("ts")
        req = CheckRequest(text=text, chat_id=msg.chat_id, target_id=msg.message_id, thread_id=thread_ts,
                           requested_by=msg.sender_id)
        # A mention is answered by the app_mention listener, never also as an auto check.
        mentioned = bool(bot_user_id) and f"<@{bot_user_id}" in event.get("text", "")
        await self.chat.observe("slack", tracked, req, SlackResponder(client, str(msg.chat_id), thread_ts),
                                auto=not mentioned)

    async def _on_chat_command(self, ack: Any, command: dict[str, Any], client: Any) -> None:
        """`/track on|off`, `/auto on|off`, `/forget`, `/stats` in a channel: configured admins only
        (Slack has no per-channel admin role to ask); answered ephemerally in the ack. `/forget me` (anyone,
        their own data): acked at once and answered privately when done (it can outlast Slack's 3 s)."""
        name = command.get("command", "").lstrip("/").lower()
        channel = command.get("channel_id", "")
        kind = "private" if command.get("channel_name") == "directmessage" or channel.startswith("D") else "group"
        req = ChatSettingsRequest(platform="slack", chat_id=channel, chat_kind=kind,
                                  target_id=command.get("trigger_id", ""), user_id=command.get("user_id"),
                                  command=name, args=slack_to_plain(command.get("text", "")).strip(),
                                  title=command.get("channel_name", ""))
        if name == "forget" and req.args.lower() == "me":
            await ack(text=esc("Deleting what I keep about you…"), response_type="ephemeral")
            response_url, user = command.get("response_url"), command.get("user_id", "")

            async def answer() -> None:
                text = esc(await self.chat.answer(req))
                if response_url:
                    await respond_ephemeral(response_url, text)
                else:
                    await client.chat_postEphemeral(channel=channel, user=user, text=text)
            self.chat.service.spawn(self._quietly(answer(), "forget me"), name="tipline-slack-forget")
            return
        await ack(text=esc(await self.chat.answer(req)), response_type="ephemeral")

    async def _on_watch_command(self, ack: Any, command: dict[str, Any], client: Any) -> None:
        """`/watch add|list|remove …` (configured admins), answered to the user alone. Adding reads each channel
        once, which can outlast Slack's 3 s: acked at once, the answer follows through the response_url."""
        channel, user = command.get("channel_id", ""), command.get("user_id", "")
        req = WatchRequest(platform="slack", chat_id=channel, target_id=command.get("trigger_id", ""), user_id=user,
                           args=slack_to_plain(command.get("text", ""), links="url").strip())
        if parse_watch(req.args)[0] != "add" or not self.chat.watch_commands.admins.is_admin("slack", user):
            await ack(text=esc(await self.chat.answer(req)), response_type="ephemeral")
            return
        await ack(text="⏳ Reading the channels…", response_type="ephemeral")
        response_url = command.get("response_url")

        async def answer() -> None:
            text = esc(await self.chat.answer(req))
            if response_url:
                await respond_ephemeral(response_url, text)
            else:
                await client.chat_postEphemeral(channel=channel, user=user, text=text)
        self.chat.service.spawn(self._quietly(answer(), "watch command"), name="tipline-slack-watch")

    async def _on_digest_command(self, ack: Any, command: dict[str, Any], client: Any) -> None:
        """`/digest …`, `/trending [hours]`, `/alerts …`: configured admins only (no per-channel admin role
        on Slack). Acked at once (a digest can take longer than Slack's 3 s); a digest is posted in the
        channel, any other answer goes to the user alone."""
        await ack()
        channel, user = command.get("channel_id", ""), command.get("user_id", "")
        kind = "private" if command.get("channel_name") == "directmessage" or channel.startswith("D") else "group"
        req = DigestRequest(platform="slack", chat_id=channel, chat_kind=kind, target_id=command.get("trigger_id", ""),
                            user_id=user, command=command.get("command", "").lstrip("/").lower(),
                            args=slack_to_plain(command.get("text", "")).strip())

        response_url = command.get("response_url")

        async def answer() -> None:
            text = await self.chat.answer(req)
            if not text:
                return
            if response_url:  # works in channels the app is not a member of, where postEphemeral fails
                await respond_ephemeral(response_url, esc(text))
            else:
                await client.chat_postEphemeral(channel=channel, user=user, text=esc(text))
        self.chat.service.spawn(self._quietly(answer(), "digest command"), name="tipline-slack-digest")

    @staticmethod
    async def _quietly(coro: Any, what: str) -> None:
        try:
            await coro
        except Exception:
            log.exception("slack: %s failed", what)

    async def _on_digest_check(self, ack: Any, body: dict[str, Any], client: Any) -> None:
        """A digest's "Check #n": the story's representative message is checked in the digest's thread."""
        await ack()
        channel, _, user, key = self._action_place(body)
        message_ts = (body.get("message") or {}).get("ts") or (body.get("container") or {}).get("message_ts")

        async def check() -> None:
            text = await self.chat.story_text(key)
            if text is None:
                lang = await self.chat.digests.language("slack", channel) if self.chat.digests else "en"
                await client.chat_postEphemeral(channel=channel, user=user, text=esc(t("digest.gone", lang)))
                return
            req = CheckRequest(text=text, chat_id=channel, target_id=str(message_ts), thread_id=message_ts,
                               requested_by=user)
            responder = SlackResponder(client, channel, message_ts, requester=user)
            action_ts = (body.get("actions") or [{}])[0].get("action_ts") or body.get("trigger_id") or ""
            await self.chat.submit("slack", req, Ticket(f"slack-digest:{channel}:{message_ts}:{user}:{action_ts}",
                                                        "slack", SlackResponderFactory.where(responder)))
        self.chat.service.spawn(self._quietly(check(), "digest check"), name="tipline-slack-digest-check")

    async def _on_error(self, error: Exception, body: dict[str, Any]) -> None:
        log.error("slack: error while handling a request", exc_info=error)


__all__ = ["SlackBot", "SlackConfig", "SlackResponder", "SlackNotifier", "respond_ephemeral", "SHORTCUT_CHECK", "render_blocks", "render_evidence", "actions_block", "slack_to_plain", "to_incoming",
           "is_ignored", "esc", "link", "safe_url"]


def _signature_headers_well_formed(headers: Mapping[str, str]) -> bool:
    """X-Slack-Request-Timestamp is a Unix time in digits and X-Slack-Signature a "v0=" hex digest, as
    Slack sends them (api.slack.com/authentication/verifying-requests-from-slack); anything else is
    refused before the verifier, which would raise on it."""
    ts, sig = headers.get("X-Slack-Request-Timestamp", ""), headers.get("X-Slack-Signature", "")
    return (ts.isascii() and ts.isdigit() and len(ts) <= 12
            and sig.startswith("v0=") and len(sig) == 67 and all(c in "0123456789abcdef" for c in sig[3:]))
