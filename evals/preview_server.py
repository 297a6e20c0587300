"""A local t.me for `tipline bench watch`: public channels' preview pages (`/s/<name>`, `?before=<id>`) in
the structure Telegram serves and core/watch/telegram_preview.py reads (a channel header, the history, each post's
`data-post`, text, date and views, the "load older" link), with about the per-post markup of a real page
so parsing costs what it would. Counts every request it answers.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiohttp import web

PAGE_SIZE = 20


@dataclass
class BenchPost:
    id: int
    text: str
    at: datetime
    views: str = "1.2K"
    shown_at: float = 0.0  # time.time() when it was put on the page


@dataclass
class BenchChannel:
    name: str
    title: str
    posts: list[BenchPost] = field(default_factory=list)


def _post_html(ch: BenchChannel, p: BenchPost) -> str:
    when = p.at.astimezone(UTC)
    text = html.escape(p.text).replace("\n", "<br/>")
    return (f'<div class="tgme_widget_message_wrap js-widget_message_wrap"><div class="tgme_widget_message '
            f'text_not_supported_wrap js-widget_message" data-post="{ch.name}/{p.id}" data-view="eyJjIjotMTAwMT">'
            f'<div class="tgme_widget_message_user"><a href="https://t.me/{ch.name}"><i class="tgme_widget_message_'
            f'user_photo bgcolor4" style="background-color:#5eb5f7" data-content="{html.escape(ch.title[:1])}"></i>'
            '</a></div><div class="tgme_widget_message_bubble"><i class="tgme_widget_message_bubble_tail"><svg '
            'class="bubble_icon" width="9px" height="20px" viewBox="0 0 9 20"><g fill="none"></g></svg></i>'
            f'<div class="tgme_widget_message_author accent_color"><a class="tgme_widget_message_owner_name" '
            f'href="https://t.me/{ch.name}"><span dir="auto">{html.escape(ch.title)}</span></a></div>'
            f'<div class="tgme_widget_message_text js-message_text" dir="auto">{text}</div>'
            '<div class="tgme_widget_message_footer compact js-message_footer"><div class="tgme_widget_message_info '
            f'short js-message_info"><span class="tgme_widget_message_views">{p.views}</span><span '
            'class="copyonly">&nbsp;views</span><span class="tgme_widget_message_meta"><a class="tgme_widget_'
            f'message_date" href="https://t.me/{ch.name}/{p.id}"><time datetime="{when.isoformat(timespec="seconds")}"'
            f' class="time">{when:%H:%M}</time></a></span></div></div></div></div></div>')


def preview_page(ch: BenchChannel, before: int | None) -> str:
    posts = sorted(ch.posts, key=lambda p: p.id)
    if before is not None:
        posts = [p for p in posts if p.id < before]
    posts = posts[-PAGE_SIZE:]
    more = (f'<div class="tgme_widget_message_centered js-messages_more_wrap"><a href="/s/{ch.name}?before='
            f'{posts[0].id}" class="tme_messages_more js-messages_more" data-before="{posts[0].id}"></a></div>'
            if posts and posts[0].id > 1 else "")
    title = html.escape(ch.title)
    return ('<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>' + title + ' – Telegram</title>'
            '<link href="//telegram.org/css/widget-frame.css?68" rel="stylesheet"><script>var TWidget = {};</script>'
            '</head><body class="widget_frame_base tgme_body"><div class="tgme_page_wrap"><main class="tgme_main">'
            '<div class="tgme_container"><div class="tgme_right_column"><div class="tgme_channel_info"><div '
            f'class="tgme_channel_info_header"><div class="tgme_channel_info_header_title"><span dir="auto">{title}'
            f'</span></div><div class="tgme_channel_info_header_username"><a href="https://t.me/{ch.name}">@'
            f'{ch.name}</a></div></div></div></div><section class="tgme_channel_history js-message_history">{more}'
            + "\n".join(_post_html(ch, p) for p in posts) + "</section></div></main></div></body></html>")


@dataclass
class BenchPreviewServer:
    channels: dict[str, BenchChannel] = field(default_factory=dict)
    requests: list[float] = field(default_factory=list)  # time.monotonic() of each request
    port: int = 0
    _runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> BenchPreviewServer:
        app = web.Application()
        app.router.add_get("/s/{name}", self._preview)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _preview(self, request: web.Request) -> web.Response:
        import time

        self.requests.append(time.monotonic())
        ch = self.channels.get(request.match_info["name"])
        if ch is None:
            return web.Response(status=404, text="Not Found")
        before = request.query.get("before", "")
        return web.Response(text=preview_page(ch, int(before) if before.isdigit() else None),
                            content_type="text/html", charset="utf-8")
