"""A local t.me: public channels' web preview pages (`/s/<name>`, `?before=<id>`) and the plain `/<name>`
page a name without a preview is redirected to, in the markup Telegram serves (the structure RSSHub's
telegram channel route reads; written here from that structure, not copied from real pages).

    fake = await FakeTelegramPreview().start()
    fake.channel("novosti", "Новости 24")
    fake.post("novosti", "Текст поста", views="12.4K")
    fake.post("other", "…", forwarded=("Новости 24", "https://t.me/novosti/1"))
    fake.channel("gone").mode = "gone"          # preview | no_preview | gone | private | layout | empty | restricted
    fake.slow_down(retry_after="120")           # the next request: 429 with Retry-After
    fake.image("a.jpg", jpeg_bytes)             # served at /file/a.jpg (status=, delay=, content_type=, chunked=)
    fake.post("novosti", "", photo="a.jpg")     # a post whose photo is that file (photo=True: a CDN URL)
    settings.telegram_preview_url = fake.base_url
    fake.requests                               # [(path, query dict)]
"""

from __future__ import annotations

import asyncio
import html
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from aiohttp import web

from tests.fakes.loopback import LoopbackFake

PAGE_SIZE = 20


@dataclass
class FakePost:
    id: int
    text: str
    at: datetime
    views: str | None = None  # as the page shows it: "12.4K"
    forwarded: tuple[str, str] | None = None  # (name shown, link or "" for a hidden user)
    reply_to: tuple[int, str] | None = None  # (post id, its text quoted)
    link_preview: tuple[str, str, str] | None = None  # (site, title, description)
    service: bool = False
    photo: bool | str = False  # True: a photo on Telegram's CDN (never fetched); a name: this fake's /file/<name>


@dataclass
class FakeImage:
    data: bytes
    status: int = 200
    delay: float = 0.0  # seconds before the answer starts
    content_type: str = "image/jpeg"
    chunked: bool = False  # no Content-Length: the body streams


@dataclass
class FakeChannel:
    name: str
    title: str
    posts: list[FakePost] = field(default_factory=list)
    mode: str = "preview"
    description: str = ""


def _text_html(text: str) -> str:
    """A post's text as t.me writes it: escaped, <br/> for new lines, emoji wrapped in <i class="emoji">."""
    out = []
    for ch in text:
        if ch == "\n":
            out.append("<br/>")
        elif ord(ch) >= 0x1F300:
            code = ch.encode("utf-8").hex().upper()
            out.append(f'<i class="emoji" style="background-image:url(\'//telegram.org/img/emoji/40/{code}.png\')">'
                       f"<b>{ch}</b></i>")
        else:
            out.append(html.escape(ch))
    return "".join(out)


def _post_html(ch: FakeChannel, p: FakePost, base: str = "") -> str:
    name, esc = ch.name, html.escape
    when = p.at.astimezone(UTC)
    parts = [f'<div class="tgme_widget_message_wrap js-widget_message_wrap">'
             f'<div class="tgme_widget_message {"service_message " if p.service else ""}text_not_supported_wrap '
             f'js-widget_message" data-post="{name}/{p.id}" data-view="eyJjIjotMTAwMTIzNDU2Nzg5MCwicCI6' f'{p.id}">',
             f'<div class="tgme_widget_message_user"><a href="https://t.me/{name}"><i class="tgme_widget_message_user_photo '
             f'bgcolor4" style="background-color:#5eb5f7" data-content="{esc(ch.title[:1])}"></i></a></div>',
             '<div class="tgme_widget_message_bubble"><i class="tgme_widget_message_bubble_tail">'
             '<svg class="bubble_icon" width="9px" height="20px" viewBox="0 0 9 20"><g fill="none"></g></svg></i>',
             f'<div class="tgme_widget_message_author accent_color"><a class="tgme_widget_message_owner_name" '
             f'href="https://t.me/{name}"><span dir="auto">{esc(ch.title)}</span></a></div>']
    if p.forwarded is not None:
        who, link = p.forwarded
        inner = f'<span dir="auto">{esc(who)}</span>'
        name_html = (f'<a class="tgme_widget_message_forwarded_from_name" href="{esc(link)}">{inner}</a>' if link
                     else f'<span class="tgme_widget_message_forwarded_from_name">{inner}</span>')
        parts.append(f'<div class="tgme_widget_message_forwarded_from accent_color">Forwarded from {name_html}</div>')
    if p.reply_to is not None:
        rid, quoted = p.reply_to
        parts.append(f'<a class="tgme_widget_message_reply" href="https://t.me/{name}/{rid}">'
                     f'<div class="tgme_widget_message_author accent_color"><span class="tgme_widget_message_author_name" '
                     f'dir="auto">{esc(ch.title)}</span></div><div class="tgme_widget_message_metatext '
                     f'js-message_reply_text" dir="auto">{_text_html(quoted)}</div></a>')
    if p.photo:
        url = f"{base}/file/{p.photo}" if isinstance(p.photo, str) else "https://cdn4.telesco.pe/file/abc.jpg"
        parts.append(f'<a class="tgme_widget_message_photo_wrap blured 5426376278946301234 8923" '
                     f'href="https://t.me/{name}/{p.id}" style="width:800px;background-image:url(\'{esc(url)}\')">'
                     '<div class="tgme_widget_message_photo" style="padding-top:56.25%"></div></a>')
    if p.text:
        cls = "tgme_widget_message_text service_message_text js-message_text" if p.service \
            else "tgme_widget_message_text js-message_text"
        parts.append(f'<div class="{cls}" dir="auto">{_text_html(p.text)}</div>')
    if p.link_preview is not None:
        site, title, description = p.link_preview
        parts.append(f'<a class="tgme_widget_message_link_preview" href="https://example.org/article">'
                     f'<div class="link_preview_site_name accent_color" dir="auto">{esc(site)}</div>'
                     f'<div class="link_preview_title" dir="auto">{esc(title)}</div>'
                     f'<div class="link_preview_description" dir="auto">{_text_html(description)}</div></a>')
    views = f'<span class="tgme_widget_message_views">{esc(p.views)}</span><span class="copyonly">&nbsp;views</span>' \
        if p.views is not None else ""
    parts.append(f'<div class="tgme_widget_message_footer compact js-message_footer">'
                 f'<div class="tgme_widget_message_info short js-message_info">{views}'
                 f'<span class="tgme_widget_message_meta"><a class="tgme_widget_message_date" '
                 f'href="https://t.me/{name}/{p.id}"><time datetime="{when.isoformat(timespec="seconds")}" '
                 f'class="time">{when:%H:%M}</time></a></span></div></div>')
    parts.append("</div></div></div>")
    return "\n".join(parts)


def _head(title: str) -> str:
    return (f'<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)} – Telegram</title>\n'
            f'<meta property="og:title" content="{html.escape(title)}">\n'
            '<link href="//telegram.org/css/widget-frame.css?68" rel="stylesheet">\n'
            '<script>var TWidget = {}; if (1 < 2 && "<div class=\\"tgme_widget_message\\">") {}</script>\n'
            '<style>.tgme_widget_message{color:#000}</style>\n</head>\n')


def preview_page(ch: FakeChannel, posts: list[FakePost], before: int | None, base: str = "") -> str:
    """`/s/<name>`: the channel's header in the right column, the history with a "load older" link."""
    name, esc = ch.name, html.escape
    more = ""
    if posts and posts[0].id > min(p.id for p in ch.posts):
        more = (f'<div class="tgme_widget_message_centered js-messages_more_wrap"><a href="/s/{name}?before='
                f'{posts[0].id}" class="tme_messages_more js-messages_more" data-before="{posts[0].id}"></a></div>')
    body = "\n".join(_post_html(ch, p, base) for p in posts) if posts else \
        '<div class="tgme_widget_message_centered"><div class="tme_no_messages_found">No posts found</div></div>'
    info = (f'<div class="tgme_channel_info"><div class="tgme_channel_info_header"><i class="tgme_page_photo_image '
            f'bgcolor1" data-content="{esc(ch.title[:1])}"></i><div class="tgme_channel_info_header_title">'
            f'<span dir="auto">{esc(ch.title)}</span></div><div class="tgme_channel_info_header_username">'
            f'<a href="https://t.me/{name}">@{name}</a></div></div><div class="tgme_channel_info_counters">'
            '<div class="tgme_channel_info_counter"><span class="counter_value">48.2K</span> <span class="counter_type">'
            'subscribers</span></div></div><div class="tgme_channel_info_description">'
            f'{_text_html(ch.description)}</div></div>')
    return (_head(ch.title) + '<body class="widget_frame_base tgme_body">\n<div class="tgme_page_wrap">\n'
            '<header class="tgme_header search_collapsed"><div class="tgme_header_search"></div></header>\n'
            f'<main class="tgme_main"><div class="tgme_container"><div class="tgme_right_column">{info}</div>\n'
            f'<section class="tgme_channel_history js-message_history">\n{more}\n{body}\n</section>\n'
            '</div></main></div>\n</body>\n</html>\n')


def plain_page(ch: FakeChannel | None, name: str) -> str:
    """`/<name>`: a title and description when the name exists; "you can contact @name" when it does not."""
    if ch is None or ch.mode == "gone":
        return (_head(f"Telegram: Contact @{name}") + '<body class="tgme_page_body"><div class="tgme_page_wrap">'
                '<div class="tgme_page"><div class="tgme_page_icon"></div><div class="tgme_page_description">'
                'If you have <strong>Telegram</strong>, you can contact <a class="tgme_username_link" '
                f'href="tg://resolve?domain={name}">@{name}</a> right away.</div></div></div></body></html>')
    description = _text_html(ch.description)
    if ch.mode == "restricted":
        description = "This channel can’t be displayed because it violated Telegram's Terms of Service."
    return (_head(ch.title) + '<body class="tgme_page_body"><div class="tgme_page_wrap"><div class="tgme_page">'
            f'<div class="tgme_page_photo"></div><div class="tgme_page_title"><span dir="auto">{html.escape(ch.title)}'
            f'</span></div><div class="tgme_page_extra">48 210 subscribers</div><div class="tgme_page_description" '
            f'dir="auto">{description}</div><div class="tgme_page_action"><a class="tgme_action_button_new shine" '
            f'href="tg://resolve?domain={ch.name}">View in Telegram</a></div></div></div></body></html>')


@dataclass
class FakeTelegramPreview(LoopbackFake):
    channels: dict[str, FakeChannel] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    refusals: list[tuple[int, dict[str, str]]] = field(default_factory=list)  # answered first, in order
    images: dict[str, FakeImage] = field(default_factory=dict)
    image_requests: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._changed = asyncio.Condition()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def channel(self, name: str, title: str = "", *, mode: str = "preview", description: str = "") -> FakeChannel:
        key = name.lower()
        if key not in self.channels:
            self.channels[key] = FakeChannel(name, title or name, mode=mode, description=description)
        return self.channels[key]

    def post(self, name: str, text: str, *, at: datetime | None = None, ago: timedelta | None = None,
             views: str | None = None, forwarded: tuple[str, str] | None = None, **kw) -> FakePost:
        ch = self.channel(name)
        pid = (ch.posts[-1].id if ch.posts else 0) + 1 + kw.pop("skip", 0)
        when = at or datetime.now(UTC) - (ago or timedelta(minutes=1))
        p = FakePost(pid, text, when.replace(microsecond=0), views, forwarded, **kw)
        ch.posts.append(p)
        return p

    def image(self, name: str, data: bytes, **kw) -> FakeImage:
        self.images[name] = FakeImage(data, **kw)
        return self.images[name]

    def slow_down(self, retry_after: str | None = "120", times: int = 1) -> None:
        self.refusals += [(429, {"Retry-After": retry_after} if retry_after is not None else {})] * times

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/s/{name}", self._preview)
        app.router.add_get("/file/{name}", self._file)
        app.router.add_get("/{name}", self._plain)

    async def _note(self, request: web.Request) -> web.Response | None:
        self.requests.append((request.path, dict(request.query)))
        async with self._changed:
            self._changed.notify_all()
        if self.refusals:
            status, headers = self.refusals.pop(0)
            return web.Response(status=status, headers=headers, text="Too Many Requests")
        return None

    async def _preview(self, request: web.Request) -> web.StreamResponse:
        if (refused := await self._note(request)) is not None:
            return refused
        name = request.match_info["name"]
        ch = self.channels.get(name.lower())
        if ch is None or ch.mode in ("gone", "no_preview", "restricted"):
            raise web.HTTPFound(f"/{name}")
        if ch.mode == "private":
            return web.Response(status=403, text="Forbidden")
        if ch.mode == "layout":  # Telegram changed its markup: a 200 page with posts tipline cannot find
            return web.Response(text=_head(ch.title) + '<body><div class="tg_feed"><article class="tg_post" '
                                'data-id="7">Новый формат</article></div></body></html>', content_type="text/html")
        before = request.query.get("before")
        posts = sorted(ch.posts, key=lambda p: p.id)
        if ch.mode == "empty":
            posts = []
        if before and before.isdigit():
            posts = [p for p in posts if p.id < int(before)]
        posts = posts[-PAGE_SIZE:]
        return web.Response(text=preview_page(ch, posts, int(before) if before and before.isdigit() else None,
                                              self.base_url), content_type="text/html", charset="utf-8")

    async def _file(self, request: web.Request) -> web.StreamResponse:
        """A photo, as Telegram's CDN serves it: the bytes with their type; 404 for a file it does not have."""
        name = request.match_info["name"]
        self.image_requests.append(name)
        img = self.images.get(name)
        if img is None:
            return web.Response(status=404, text="Not Found")
        if img.delay:
            await asyncio.sleep(img.delay)
        if img.status != 200:
            return web.Response(status=img.status, text="error")
        if not img.chunked:
            return web.Response(body=img.data, content_type=img.content_type)
        resp = web.StreamResponse(headers={"Content-Type": img.content_type})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for i in range(0, len(img.data), 256 * 1024):
            await resp.write(img.data[i:i + 256 * 1024])
        await resp.write_eof()
        return resp

    async def _plain(self, request: web.Request) -> web.StreamResponse:
        if (refused := await self._note(request)) is not None:
            return refused
        name = request.match_info["name"]
        return web.Response(text=plain_page(self.channels.get(name.lower()), name), content_type="text/html",
                            charset="utf-8")
