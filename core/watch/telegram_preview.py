"""Telegram's public web preview of a channel (`https://t.me/s/<name>`): channel names, the page's posts,
and what an answer says about the channel.

A public channel's preview page lists its latest ~20 posts, oldest first; `?before=<id>` gives the ~20
before that post. Each post is a `div.tgme_widget_message` with `data-post="<name>/<id>"`; inside it:

    .tgme_widget_message_forwarded_from  "Forwarded from" + .tgme_widget_message_forwarded_from_name
                                         (an <a href="https://t.me/<origin>/<id>"> for a channel, a <span>
                                         for a hidden user)
    .tgme_widget_message_text            the post's own text (<br> = a new line); the same class inside
                                         .tgme_widget_message_reply (the quoted message, also marked
                                         js-message_reply_text) or a link preview is not the post's
    .tgme_widget_message_views           "12.4K"
    a.tgme_widget_message_photo_wrap     a photo: style="…background-image:url('https://cdn….telesco.pe/file/….jpg')"
                                         (an album has one per photo; the first is read)
    .tgme_widget_message_date            <a href="https://t.me/<name>/<id>"><time datetime="…+00:00">
    .service_message                     "channel photo updated", pins: no text of the channel's own

and around them `.tgme_channel_info_header_title` (the channel's title), `.tgme_channel_history`,
`.tme_no_messages_found` and `a.tme_messages_more[data-before]`. That structure is what RSSHub's
telegram channel route (lib/routes/telegram/channel.ts) reads; the fixtures in tests/fakes are written
from it, not copied from pages. A name without a preview (a user, a group, a bot, a channel that turned
its preview off) is redirected to `https://t.me/<name>`, whose page has a `.tgme_page_title` when the
name exists and none when it does not.

Parsing is the standard library's `html.parser` (no recursion, so a deeply nested page costs nothing
more than a flat one), over at most `max_bytes` of the page (TIPLINE_FETCH_MAX_BYTES), keeping at most
`MAX_POSTS` posts of at most `MAX_TEXT` characters. Nothing of a user's message is ever in a request:
the reader asks for a channel's page by its public name, and nothing else.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Literal
from urllib.parse import parse_qs, urlsplit

import aiohttp

from core.watch.public_session import PublicSession
from core.evidence.fetch import decode_body

log = logging.getLogger(__name__)

PUBLIC_BASE = "https://t.me"  # post links always point here, whatever mirror the pages came from
MAX_POSTS = 100  # a preview page shows ~20; anything past this is not a preview page
MAX_TEXT = 8192  # characters of one post (Telegram: 4,096 for a text, 1,024 for a caption)
DEFAULT_RETRY_S = 60.0  # a 429 without a usable Retry-After
MAX_RETRY_S = 24 * 3600.0  # a Retry-After past this is read as this (a bogus header must not stop a channel for good)

# Telegram's rule for a public username: letters, digits and underscores, starting with a letter; 5-32
# characters (4 for some names sold on Fragment).
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{3,31}")
# t.me paths that are not channels: invite links and private-channel post links are private, the rest
# are Telegram features.
_PRIVATE_PATHS = {"joinchat", "c"}
_RESERVED = {"s", "addstickers", "addemoji", "addlist", "addtheme", "share", "proxy", "socks", "setlanguage",
             "boost", "iv", "login", "confirmphone", "invoice", "giftcode", "bg", "contact", "m"}
_HOSTS = {"t.me", "www.t.me", "telegram.me", "www.telegram.me", "telegram.dog"}


class NotAChannel(ValueError):
    """`str(exc)` says why the text names no public channel; `private` when it is an invite link."""

    def __init__(self, message: str, *, private: bool = False):
        super().__init__(message)
        self.private = private


def channel_name(ref: str) -> str:
    """The canonical (lowercase) name of a public channel written as `@name`, `name`, `t.me/name`,
    `https://t.me/s/name`, a post link `https://t.me/name/123`, `telegram.me/…` or `tg://resolve?domain=name`.
    Raises `NotAChannel` (private=True for invite links and t.me/c/… links, which have no public name)."""
    s = ref.strip().strip("<>").strip()
    if not s:
        raise NotAChannel("it is empty")
    if s.lower().startswith("tg://"):
        domain = parse_qs(urlsplit(s).query).get("domain", [""])[0]
        return _checked(domain, ref)
    if s.startswith("@"):
        return _checked(s[1:], ref)
    bare = re.sub(r"^[a-z][a-z0-9+.-]*://", "", s, flags=re.I)
    host, slash, path = bare.partition("/")
    if slash and host.lower() in _HOSTS:
        parts = [p for p in path.split("?", 1)[0].split("#", 1)[0].split("/") if p]
        if not parts:
            raise NotAChannel("the link names no channel")
        first = parts[0]
        if first.startswith("+") or first.lower() in _PRIVATE_PATHS:
            raise NotAChannel("it is an invite link or a private channel's link: only public channels (with a "
                              "@name) can be watched", private=True)
        if first.lower() == "s" and len(parts) > 1:
            first = parts[1]
        elif first.lower() in _RESERVED:
            raise NotAChannel("the link is not a channel's")
        return _checked(first, ref)
    if slash or "." in host:
        raise NotAChannel("only t.me links and @names name a channel")
    return _checked(s, ref)


def _checked(name: str, ref: str) -> str:
    if not _NAME.fullmatch(name or ""):
        raise NotAChannel("a channel's name has 5-32 letters, digits or underscores and starts with a letter")
    return name.lower()


def post_link(channel: str, post_id: int) -> str:
    return f"{PUBLIC_BASE}/{channel}/{post_id}"


def parse_views(shown: str) -> int | None:
    """"12.4K" -> 12400, "1.2M" -> 1200000, "987" -> 987; None when it is not a count."""
    s = shown.strip().replace("\u00a0", "").replace(" ", "").replace(",", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KkMmBb]?)", s)
    if m is None:
        return None
    scale = {"": 1, "k": 1_000, "m": 1_000_000, "b": 1_000_000_000}[m[2].lower()]
    return int(round(float(m[1]) * scale))


def short_count(n: int) -> str:
    """12400 -> "12.4k", 1200000 -> "1.2M", 987 -> "987" (how the card shows views)."""
    if n < 1000:
        return str(n)
    for limit, suffix in ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "k")):
        if n >= limit:
            value = n / limit
            text = f"{value:.1f}" if value < 100 else f"{value:.0f}"
            return text.removesuffix(".0") + suffix
    return str(n)


@dataclass(frozen=True)
class PreviewPost:
    channel: str  # lowercase, from data-post
    post_id: int
    text: str
    at: datetime | None
    views: int | None = None
    forwarded_from: str = ""  # the name shown after "Forwarded from"
    forwarded_link: str = ""  # its link when the origin is a public channel's post
    service: bool = False
    photo_url: str = ""  # the post's (first) photo, as the page's style attribute names it

    @property
    def link(self) -> str:
        return post_link(self.channel, self.post_id)

    @property
    def forwarded(self) -> bool:
        return bool(self.forwarded_from or self.forwarded_link)

    @property
    def origin(self) -> str:
        """"<channel>/<id>" of the post this one is or repeats: a forward of a channel's post is that post
        (a forward chain counts once); a forward from a hidden user, "" (nothing to tell copies apart by)."""
        if self.forwarded_link:
            parts = [p for p in urlsplit(self.forwarded_link).path.split("/") if p]
            if len(parts) >= 2 and parts[0].lower() == "s":
                parts = parts[1:]
            if len(parts) >= 2 and _NAME.fullmatch(parts[0]) and parts[1].isdigit():
                return f"{parts[0].lower()}/{int(parts[1])}"
            return ""
        if self.forwarded:
            return ""
        return f"{self.channel}/{self.post_id}"


@dataclass
class PreviewPage:
    posts: list[PreviewPost] = field(default_factory=list)
    title: str = ""  # the channel's title (header)
    username: str = ""  # "@name" as the header shows it
    channel_header: bool = False  # the preview's channel header (.tgme_channel_info) is there
    history: bool = False  # .tgme_channel_history is there
    no_posts_notice: bool = False  # .tme_no_messages_found
    message_blocks: int = 0  # post elements seen, read or not (a layout change reads none of them)
    before: int | None = None  # the "load older" link's ?before=
    page_title: str = ""  # .tgme_page_title of the plain t.me/<name> page
    restricted: str = ""  # a restriction notice, when the page shows one instead of posts
    via: str = "preview"  # "account": read through the account (core/watch/account_reader.py), where no post is no page fault


_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
         "wbr"}
_BACKGROUND = re.compile(r"background-image\s*:\s*url\(\s*(['\"]?)([^'\"()\s]{1,2000})\1\s*\)", re.I)
_RESTRICTION = re.compile(r"can[’']t be displayed|cannot be displayed|violat\w+ (?:local laws|Telegram)|"
                          r"is (?:blocked|unavailable) (?:in|because|due)", re.I)


@dataclass
class _Post:
    depth: int
    channel: str = ""
    post_id: int = 0
    text: list[str] = field(default_factory=list)
    text_depth: int | None = None
    text_done: bool = False
    at: datetime | None = None
    views: list[str] = field(default_factory=list)
    views_depth: int | None = None
    fwd_name: list[str] = field(default_factory=list)
    fwd_depth: int | None = None
    fwd_link: str = ""
    forwarded: bool = False
    service: bool = False
    chars: int = 0
    photo_url: str = ""


class _PreviewParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = PreviewPage()
        self.stack: list[tuple[str, frozenset[str]]] = []
        self.post: _Post | None = None
        self.capture: list[tuple[int, list[str]]] = []  # (depth, buffer) of header texts being read
        self._title: list[str] = []
        self._username: list[str] = []
        self._page_title: list[str] = []
        self._notice: list[str] = []

    # --- the element stack ---------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = frozenset(a.get("class", "").split())
        if tag == "br":
            self._text("\n")
            return
        if tag in _VOID:
            return
        self.stack.append((tag, classes))
        depth = len(self.stack)
        post = self.post
        if "tgme_widget_message" in classes and post is None:
            self.page.message_blocks += 1
            if len(self.page.posts) < MAX_POSTS:
                self.post = _Post(depth)
                channel, _, pid = a.get("data-post", "").partition("/")
                if _NAME.fullmatch(channel) and pid.isdigit():
                    self.post.channel, self.post.post_id = channel.lower(), int(pid)
                self.post.service = "service_message" in classes
            return
        if post is not None:
            self._inside_post(post, tag, classes, a, depth)
            return
        if "tgme_channel_info" in classes:
            self.page.channel_header = True
        if "tgme_channel_history" in classes:
            self.page.history = True
        if "tme_no_messages_found" in classes:
            self.page.no_posts_notice = True
            self.capture.append((depth, self._notice))
        if "tme_messages_more" in classes and a.get("data-before", "").isdigit():
            before = int(a["data-before"])
            self.page.before = before if self.page.before is None else min(before, self.page.before)
        for name, buf in (("tgme_channel_info_header_title", self._title),
                          ("tgme_channel_info_header_username", self._username),
                          ("tgme_page_title", self._page_title),
                          ("tgme_page_description", self._notice)):
            if name in classes:
                self.capture.append((depth, buf))

    def _inside_post(self, post: _Post, tag: str, classes: frozenset[str], a: dict[str, str], depth: int) -> None:
        if "service_message" in classes:
            post.service = True
        if "tgme_widget_message_forwarded_from" in classes:
            post.forwarded = True
        if "tgme_widget_message_forwarded_from_name" in classes and post.fwd_depth is None:
            post.fwd_depth = depth
            post.fwd_link = a.get("href", "") if tag == "a" else ""
        if "tgme_widget_message_views" in classes and post.views_depth is None:
            post.views_depth = depth
        if "tgme_widget_message_photo_wrap" in classes and not post.photo_url and not self._quoted():
            m = _BACKGROUND.search(a.get("style", ""))
            if m and m[2].lower().startswith(("https://", "http://", "//")):
                post.photo_url = ("https:" + m[2]) if m[2].startswith("//") else m[2]
        if tag == "time" and a.get("datetime") and post.at is None and self._within("tgme_widget_message_date"):
            post.at = _when(a["datetime"])
        if ("tgme_widget_message_text" in classes and post.text_depth is None and not post.text_done
                and "js-message_reply_text" not in classes and not self._quoted()):
            post.text_depth = depth

    def _within(self, cls: str) -> bool:
        return any(cls in c for _, c in self.stack)

    def _quoted(self) -> bool:
        """Inside a quoted message (a reply) or a link preview: text that is not the post's own."""
        return any("tgme_widget_message_reply" in c or any("link_preview" in k for k in c) for _, c in self.stack)

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        # Close up to the matching open element; a stray end tag (no such element open) is ignored.
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                while len(self.stack) > i:
                    self._closing(len(self.stack))
                    self.stack.pop()
                return

    def _closing(self, depth: int) -> None:
        post = self.post
        if post is not None:
            if post.text_depth == depth:
                post.text_depth, post.text_done = None, True
            if post.views_depth == depth:
                post.views_depth = None
            if post.fwd_depth == depth:
                post.fwd_depth = -1  # read; never read again
            if post.depth == depth:
                self._finish(post)
                self.post = None
        while self.capture and self.capture[-1][0] == depth:
            self.capture.pop()

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1][0] in ("script", "style"):
            return
        post = self.post
        if post is not None:
            if post.text_depth is not None:
                self._text(data)
            if post.views_depth is not None:
                post.views.append(data)
            if post.fwd_depth is not None and post.fwd_depth > 0:
                post.fwd_name.append(data)
            return
        for _, buf in self.capture:
            if sum(map(len, buf)) < 1000:
                buf.append(data)

    def _text(self, data: str) -> None:
        post = self.post
        if post is None or post.text_depth is None or post.chars >= MAX_TEXT:
            return
        piece = data[:MAX_TEXT - post.chars]
        post.text.append(piece)
        post.chars += len(piece)

    def _finish(self, post: _Post) -> None:
        if not post.post_id:
            return  # a post element without data-post: counted in message_blocks, not read
        text = "\n".join(" ".join(line.split()) for line in "".join(post.text).split("\n")).strip()
        text = re.sub(r"\n{3,}", "\n\n", text)
        views = parse_views("".join(post.views)) if post.views else None
        name = " ".join("".join(post.fwd_name).split())
        self.page.posts.append(PreviewPost(post.channel, post.post_id, text, post.at, views,
                                           forwarded_from=name if post.forwarded or name else "",
                                           forwarded_link=post.fwd_link if post.forwarded else "",
                                           service=post.service, photo_url=post.photo_url))

    def done(self) -> PreviewPage:
        if self.post is not None:  # a page cut at max_bytes: the last post is read as far as it went
            self._finish(self.post)
            self.post = None
        page = self.page
        page.title = " ".join("".join(self._title).split())
        page.username = " ".join("".join(self._username).split())
        page.page_title = " ".join("".join(self._page_title).split())
        notice = " ".join("".join(self._notice).split())
        if _RESTRICTION.search(notice):
            page.restricted = notice[:200]
        return page


def _when(value: str) -> datetime | None:
    try:
        at = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def parse_preview(html: str) -> PreviewPage:
    """The posts and markers of a preview page (or of the plain t.me/<name> page a redirect leads to).
    Never raises on bad markup: what cannot be read is simply not there."""
    parser = _PreviewParser()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # html.parser is lenient; this is the belt to its braces
        log.debug("preview: the parser stopped early", exc_info=True)
    page = parser.done()
    page.posts.sort(key=lambda p: p.post_id)
    return page


# --- reading a channel -----------------------------------------------------------------------------

# logged_out and not_channel come from the account reader (core/watch/account_reader.py) only.
Status = Literal["ok", "no_preview", "not_found", "private", "restricted", "slowed", "layout", "unreachable",
                 "logged_out", "not_channel"]


@dataclass(frozen=True)
class Outcome:
    """What one request for a channel's page said. `page` only with status ok; `retry_after` (seconds)
    only with slowed; `detail` a short reason for the others (an HTTP status, the error)."""

    status: Status
    page: PreviewPage | None = None
    retry_after: float | None = None
    detail: str = ""


def retry_after_s(value: str | None, now: float | None = None) -> float:
    """Retry-After in seconds (a number or an HTTP date), within (0, MAX_RETRY_S]; DEFAULT_RETRY_S when absent
    or unreadable."""
    if not value:
        return DEFAULT_RETRY_S
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return DEFAULT_RETRY_S
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return DEFAULT_RETRY_S
    return min(MAX_RETRY_S, max(1.0, seconds))


class PreviewReader:
    """Reads channels' preview pages from `base_url` (TIPLINE_TELEGRAM_PREVIEW_URL: https://t.me, a mirror,
    or a test server). Redirects are not followed blindly: the one a name without a preview gets (to
    /<name>) is read to tell "exists, no preview" from "no such name". One session, opened on first use."""

    def __init__(self, base_url: str = PUBLIC_BASE, *, timeout_s: float = 15.0, max_bytes: int = 2 * 1024 * 1024,
                 session: aiohttp.ClientSession | None = None):
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self._public = PublicSession(timeout_s, "text/html,application/xhtml+xml;q=0.9", session)
        self.requests = 0  # pages asked for, for the docs' request rate

    def _http(self) -> aiohttp.ClientSession:
        return self._public.get()

    async def aclose(self) -> None:
        await self._public.aclose()

    async def _get(self, path: str, params: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
        """(status, decoded body up to max_bytes, headers), redirects not followed."""
        self.requests += 1
        async with self._http().get(f"{self.base_url}{path}", params=params, allow_redirects=False) as resp:
            body = bytearray()
            async for chunk in resp.content.iter_chunked(64 * 1024):
                body += chunk
                if len(body) >= self.max_bytes:
                    del body[self.max_bytes:]
                    break
            text, _ = decode_body(bytes(body), resp.headers.get("Content-Type", ""))
            return resp.status, text, {k.lower(): v for k, v in resp.headers.items()}

    async def read(self, name: str, before: int | None = None) -> Outcome:
        """The preview page of channel `name` (its latest posts, or those before post `before`), classified.
        Never raises for what the network or Telegram does: that is the outcome's status."""
        try:
            return await self._read(name, before)
        except (aiohttp.ClientError, TimeoutError, asyncio.TimeoutError, OSError) as exc:
            return Outcome("unreachable", detail=_error_text(exc))

    async def _read(self, name: str, before: int | None) -> Outcome:
        status, text, headers = await self._get(f"/s/{name}", {"before": str(before)} if before else None)
        if status == 429:
            return Outcome("slowed", retry_after=retry_after_s(headers.get("retry-after")), detail="HTTP 429")
        if status in (301, 302, 303, 307, 308):
            return await self._redirected(name, headers.get("location", ""))
        if status in (404, 410):
            return Outcome("not_found", detail=f"HTTP {status}")
        if status == 403:
            return Outcome("private", detail="HTTP 403")
        if status != 200:
            return Outcome("unreachable", detail=f"HTTP {status}")
        return classify(await asyncio.to_thread(parse_preview, text))

    async def _redirected(self, name: str, location: str) -> Outcome:
        """A preview redirected: to /<name> when the name has no preview (its page says whether it exists)."""
        where = urlsplit(location)
        path = [p for p in where.path.split("/") if p]
        if len(path) == 2 and path[0] == "s" and path[1].lower() == name and path[1] != name:
            # The same preview under the name's own capitals: read once, never followed further.
            query = {k: v[0] for k, v in parse_qs(where.query).items()}
            status, text, headers = await self._get(f"/s/{path[1]}", query or None)
            if status == 200:
                return classify(await asyncio.to_thread(parse_preview, text))
            return Outcome("not_found" if status in (404, 410) else "unreachable", detail=f"HTTP {status}")
        if len(path) != 1 or path[0].lower() != name:
            return Outcome("not_found", detail=f"redirected to {location[:100] or 'nowhere'}")
        status, text, headers = await self._get(f"/{path[0]}")
        if status == 429:
            return Outcome("slowed", retry_after=retry_after_s(headers.get("retry-after")), detail="HTTP 429")
        if status != 200:
            return Outcome("not_found", detail=f"t.me/{name}: HTTP {status}")
        page = await asyncio.to_thread(parse_preview, text)
        if page.restricted:
            return Outcome("restricted", detail=page.restricted)
        if page.page_title:
            return Outcome("no_preview", detail=f"t.me/s/{name} redirects to t.me/{name}")
        return Outcome("not_found", detail=f"t.me/{name} names nobody")


def classify(page: PreviewPage) -> Outcome:
    """A 200 preview page: posts (ok), a notice, an empty channel, or something tipline cannot read."""
    if page.posts:
        return Outcome("ok", page=page)
    if page.restricted:
        return Outcome("restricted", detail=page.restricted)
    if page.message_blocks:
        return Outcome("layout", detail=f"{page.message_blocks} post element(s), none readable")
    if page.channel_header or page.history or page.no_posts_notice or page.page_title:
        return Outcome("no_preview", detail="the preview shows no posts")
    return Outcome("layout", detail="no posts and none of the preview's markers")


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return "no answer in time"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"cannot connect to {exc.host}:{exc.port}"
    return f"{type(exc).__name__}: {exc}"[:200]
