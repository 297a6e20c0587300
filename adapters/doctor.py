"""`tipline doctor`: check the configuration and reach each configured service, then print a table.

    service       status  detail
    data_dir      ok      /data is writable
    telegram      ok      @tipline_bot (getMe)
    slack         FAIL    auth.test: invalid_auth: the bot token (xoxb-…) was refused
    llm           ok      gpt-4o-mini is served at http://ollama:11434/v1
    gdelt         off     not configured (TIPLINE_GDELT_URL)

Each check is one cheap, read-only call in the service's own API (Telegram getMe, Slack auth.test, the
LLM's GET /models, Qdrant's GET /collections, one search per provider, one embedding), all at once, each
within `timeout_s`. Nothing here changes any state: no webhook is set, no message is sent. A service
that is not configured is "off"; with TIPLINE_OFFLINE=true every outside provider is off and nothing is
reached but your own servers and chat platforms. Every search provider, GDELT included, is off until the
operator sets it, so a machine without internet access and nothing configured exits 0. The last row says
what leaves the machine and to whom; before it, one "watch @name" row per watched public channel (and one
"watch <url>" row per news feed) with the status of its last read (docs/watch.md), and one "feed <name>"
row per fact-checker's feed (docs/feeds.md). The first rows,
"settings  warn", name each TIPLINE_* variable that is no setting and so is ignored (a typo such as
TIPLINE_TELEGRAM_BOT_TOKEN), with the setting it likely meant.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp

from bot.app import SetupError, check_data_dir
from bot.outflow import describe, outflow
from bot.settings import Settings

Status = Literal["ok", "FAIL", "warn", "off", "local"]
OPENAI_URL = "https://api.openai.com/v1"
TELEGRAM_URL = "https://api.telegram.org/bot"
SLACK_URL = "https://slack.com/api/"


@dataclass(frozen=True)
class Row:
    service: str
    status: Status
    detail: str


class Failed(Exception):
    """One service's check failed; the message is the table's detail."""


def _secret(value: Any) -> str:
    return value.get_secret_value() if value is not None else ""


async def _json(resp: aiohttp.ClientResponse) -> Any:
    try:
        return await resp.json(content_type=None)
    except (ValueError, aiohttp.ContentTypeError) as exc:
        raise Failed(f"HTTP {resp.status}, not JSON: is this the right URL?") from exc


class Doctor:
    def __init__(self, settings: Settings, session: aiohttp.ClientSession):
        self.s = settings
        self.http = session

    async def telegram(self) -> str:
        base = self.s.telegram_api_url or TELEGRAM_URL
        async with self.http.get(f"{base}{_secret(self.s.telegram_token)}/getMe") as resp:
            body = await _json(resp)
        if resp.status in (401, 404) or not body.get("ok"):
            raise Failed(f"getMe: {body.get('description') or resp.status}: Telegram does not accept "
                         "TIPLINE_TELEGRAM_TOKEN; copy it again from @BotFather")
        bot = body["result"]
        groups = "" if bot.get("can_read_all_group_messages") else "; privacy mode on (groups: /check and mentions)"
        if self.s.telegram_webhook_url:
            groups += await self._webhook(base)
        return f"@{bot.get('username')} (getMe){groups}"

    async def _webhook(self, base: str) -> str:
        """What Telegram says of the webhook: whether it points at ours, and its last delivery error."""
        async with self.http.get(f"{base}{_secret(self.s.telegram_token)}/getWebhookInfo") as resp:
            info = (await _json(resp)).get("result") or {}
        if info.get("url") != self.s.telegram_webhook_url:
            return f"; the webhook is {info.get('url') or 'not set'} (tipline run sets it to TIPLINE_TELEGRAM_WEBHOOK_URL)"
        if info.get("last_error_message"):
            raise Failed(f"Telegram cannot deliver to {self.s.telegram_webhook_url}: {info['last_error_message']} "
                         f"({info.get('pending_update_count', 0)} updates waiting)")
        return f"; webhook {info['url']}"

    async def slack(self) -> str:
        if not (_secret(self.s.slack_signing_secret) or _secret(self.s.slack_app_token)):
            raise Failed("TIPLINE_SLACK_BOT_TOKEN needs TIPLINE_SLACK_SIGNING_SECRET (HTTP mode) or "
                         "TIPLINE_SLACK_APP_TOKEN (Socket Mode)")
        app_token = _secret(self.s.slack_app_token)
        if app_token and not app_token.startswith("xapp-"):
            raise Failed("TIPLINE_SLACK_APP_TOKEN must be an app-level token (xapp-…), from Basic Information")
        base = self.s.slack_api_url or SLACK_URL
        async with self.http.post(f"{base}auth.test",
                                  headers={"Authorization": f"Bearer {_secret(self.s.slack_bot_token)}"}) as resp:
            body = await _json(resp)
        if not body.get("ok"):
            raise Failed(f"auth.test: {body.get('error') or resp.status}: the bot token (xoxb-…) was refused")
        mode = "HTTP mode"
        if app_token:
            # Hands out a WebSocket URL that is never opened: it checks the app token and changes nothing.
            async with self.http.post(f"{base}apps.connections.open",
                                      headers={"Authorization": f"Bearer {app_token}"}) as resp:
                opened = await _json(resp)
            if not opened.get("ok"):
                raise Failed(f"apps.connections.open: {opened.get('error') or resp.status}: the app-level token "
                             "(TIPLINE_SLACK_APP_TOKEN) was refused; it needs the connections:write scope")
            mode = "Socket Mode"
        return f"{body.get('user')} in {body.get('team')} (auth.test), {mode}"

    async def llm(self) -> str:
        base = (self.s.llm_base_url or OPENAI_URL).rstrip("/")
        key = _secret(self.s.llm_api_key)
        async with self.http.get(f"{base}/models", headers={"Authorization": f"Bearer {key or 'none'}"}) as resp:
            body = await _json(resp)
        if resp.status in (401, 403):
            raise Failed(f"GET /models: HTTP {resp.status}: TIPLINE_LLM_API_KEY was refused")
        if resp.status != 200:
            raise Failed(f"GET {base}/models: HTTP {resp.status}")
        served = [m.get("id") for m in body.get("data") or [] if isinstance(m, dict)]
        if served and self.s.llm_model not in served:
            raise Failed(f"TIPLINE_LLM_MODEL={self.s.llm_model} is not served at {base}; it serves: "
                         f"{', '.join(map(str, served[:8]))}")
        return f"{self.s.llm_model} is served at {base}"

    async def qdrant(self) -> str:
        url = (self.s.qdrant_url or "").rstrip("/")
        key = _secret(self.s.qdrant_api_key)
        async with self.http.get(f"{url}/collections", headers={"api-key": key} if key else {}) as resp:
            if resp.status in (401, 403):
                raise Failed(f"HTTP {resp.status}: the server wants TIPLINE_QDRANT_API_KEY (or it was refused)")
            body = await _json(resp)
        if resp.status != 200:
            raise Failed(f"GET /collections: HTTP {resp.status}")
        names = [c.get("name") for c in (body.get("result") or {}).get("collections") or []]
        have = self.s.factchecks_collection in names or any(n and n.startswith(self.s.factchecks_collection)
                                                            for n in names)
        return f"{url}: {len(names)} collections" + ("" if have else " (fact-checks not loaded yet: first start)")

    async def embeddings(self) -> str:
        url = (self.s.embed_url or "").rstrip("/")
        key = _secret(self.s.embed_api_key)
        async with self.http.post(f"{url}/embeddings", json={"model": self.s.embed_model, "input": ["tipline doctor"]},
                                  headers={"Authorization": f"Bearer {key}"} if key else {}) as resp:
            body = await _json(resp)
        if resp.status != 200:
            error = body.get("error") if isinstance(body, dict) else None
            message = error.get("message") if isinstance(error, dict) else error
            raise Failed(f"POST /embeddings: HTTP {resp.status}{f': {message}' if message else ''}")
        try:
            dim = len(body["data"][0]["embedding"])
        except (KeyError, IndexError, TypeError) as exc:
            raise Failed("POST /embeddings answered without data[0].embedding: not an OpenAI-compatible "
                         "embeddings API") from exc
        return f"{self.s.embed_model} at {url}: {dim} dimensions"

    async def searxng(self) -> str:
        url = (self.s.searxng_url or "").rstrip("/")
        async with self.http.get(f"{url}/search", params={"q": "fact check", "format": "json"}) as resp:
            if resp.status == 403:
                raise Failed("HTTP 403: JSON output is off; add json to search.formats in SearxNG's settings.yml")
            body = await _json(resp)
        if resp.status != 200 or "results" not in body:
            raise Failed(f"GET /search: HTTP {resp.status}")
        return f"{url}: {len(body['results'])} results for a test query"

    async def brave(self) -> str:
        async with self.http.get(self.s.brave_url, params={"q": "fact check", "count": "1"},
                                 headers={"X-Subscription-Token": _secret(self.s.brave_api_key),
                                          "Accept": "application/json"}) as resp:
            body = await _json(resp)
        if resp.status != 200:
            detail = ((body.get("error") or {}).get("detail") if isinstance(body, dict) else None) or ""
            raise Failed(f"HTTP {resp.status}: {detail or 'TIPLINE_BRAVE_API_KEY was refused'}")
        return "answered a test query"

    async def factcheck(self) -> str:
        async with self.http.get(self.s.factcheck_url, params={"query": "vaccine", "pageSize": "1",
                                                               "key": _secret(self.s.factcheck_api_key)}) as resp:
            body = await _json(resp)
        if resp.status != 200:
            message = ((body.get("error") or {}).get("message") if isinstance(body, dict) else None) or ""
            raise Failed(f"HTTP {resp.status}: {message or 'TIPLINE_FACTCHECK_API_KEY was refused'}")
        return "answered a test query"

    async def gdelt(self) -> str:
        params = {"query": "fact check", "mode": "artlist", "format": "json", "maxrecords": "1"}
        async with self.http.get(self.s.gdelt_url or "", params=params) as resp:
            await resp.read()
        if resp.status != 200:
            raise Failed(f"HTTP {resp.status}")
        return "answered (keyless; sees message keywords when an LLM is on)"


def _checks(s: Settings, d: Doctor) -> list[tuple[str, str | None, Callable[[], Awaitable[str]]]]:
    """(service, why it is off or None, the check) for every service tipline can use."""
    off = "off (TIPLINE_OFFLINE=true)" if s.offline else "not configured"
    slack_set = bool(_secret(s.slack_bot_token))
    return [
        ("telegram", None if _secret(s.telegram_token) else "not configured (TIPLINE_TELEGRAM_TOKEN)", d.telegram),
        ("slack", None if slack_set else "not configured (TIPLINE_SLACK_BOT_TOKEN)", d.slack),
        ("llm", None if s.llm_configured else f"{off}: offline verdicts", d.llm),
        ("qdrant", None if s.qdrant_url else "embedded in the data dir (no TIPLINE_QDRANT_URL)", d.qdrant),
        ("embeddings", None if s.embed_url else f"in-process {s.embed_model} (no TIPLINE_EMBED_URL)", d.embeddings),
        ("searxng", None if s.searxng_url else off, d.searxng),
        ("brave", None if _secret(s.brave_api_key) and s.brave_url else off, d.brave),
        ("factcheck_api", None if _secret(s.factcheck_api_key) and s.factcheck_url else off, d.factcheck),
        ("gdelt", None if s.gdelt_url else off + (" (TIPLINE_GDELT_URL)" if not s.offline else ""), d.gdelt),
    ]


async def _one(check: Callable[[], Awaitable[str]], timeout_s: float) -> tuple[Status, str]:
    try:
        return "ok", await asyncio.wait_for(check(), timeout_s)
    except Failed as exc:
        return "FAIL", str(exc)
    except TimeoutError:
        return "FAIL", f"no answer within {timeout_s:g} s"
    except aiohttp.ClientConnectorError as exc:
        return "FAIL", f"cannot connect to {exc.host}:{exc.port} ({exc.os_error.strerror or exc.os_error})"
    except aiohttp.InvalidURL as exc:
        return "FAIL", f"not a URL: {exc}"
    except aiohttp.ClientError as exc:
        return "FAIL", f"{type(exc).__name__}: {exc}"


def _settings_rows(s: Settings) -> list[Row]:
    rows: list[Row] = []
    try:
        check_data_dir(s.data_dir)
        rows.append(Row("data_dir", "ok", f"{s.data_dir} is writable"))
    except SetupError as exc:
        rows.append(Row("data_dir", "FAIL", str(exc)))
    if s.telegram_webhook_url and not _secret(s.telegram_webhook_secret):
        rows.append(Row("telegram_webhook", "FAIL", "TIPLINE_TELEGRAM_WEBHOOK_URL needs TIPLINE_TELEGRAM_WEBHOOK_SECRET"))
    if not (_secret(s.telegram_token) or _secret(s.slack_bot_token) or _secret(s.api_token)):
        rows.append(Row("tipline_run", "off", "nothing to serve: set TIPLINE_TELEGRAM_TOKEN, the Slack tokens or "
                        "TIPLINE_API_TOKEN (`tipline chat` and `check` need none)"))
    else:
        rows.append(Row("rest_api", "ok" if _secret(s.api_token) else "off",
                        f"POST /v1/checks on {s.http_host}:{s.http_port}" if _secret(s.api_token)
                        else "not configured (TIPLINE_API_TOKEN)"))
    return rows


async def diagnose(settings: Settings, *, timeout_s: float = 10.0, warnings: Sequence[str] = ()) -> list[Row]:
    """Every row of the table: the settings, then each service, reached at once where configured. First,
    one "settings  warn" row per variable that is ignored (`warnings`: bot/settings.py
    configuration_warnings, e.g. TIPLINE_TELEGRAM_BOT_TOKEN, a typo of TIPLINE_TELEGRAM_TOKEN)."""
    rows = [Row("settings", "warn", w) for w in warnings] + _settings_rows(settings)
    async with aiohttp.ClientSession(trust_env=True, timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:
        checks = _checks(settings, Doctor(settings, session))
        todo = [(name, check) for name, why_off, check in checks if why_off is None]
        results = dict(zip([n for n, _ in todo], await asyncio.gather(*(_one(c, timeout_s) for _, c in todo))))
    for name, why_off, _check in checks:
        local = name in ("qdrant", "embeddings")  # not configured = in this process, which is fine
        status, detail = results.get(name, ("local" if local else "off", why_off or ""))
        rows.append(Row(name, status, detail))
    rows += watch_rows(settings)
    rows += feed_rows(settings)
    rows.append(Row("privacy", "ok", leaves_machine(settings)))
    return rows


def watch_rows(s: Settings, now: float | None = None) -> list[Row]:
    """One row per watched public channel (bot/watch.py) and news feed (bot/watch_feeds.py) with the status of
    its last read, from the data dir's
    database as the running poller left it (read-only; nothing is fetched): warn when it cannot be read."""
    import time

    from bot.watch import describe
    from storage.watched import read_channels

    rows = [account_row(s)] if s.telegram_api_id or s.telegram_api_hash else []
    for ch in read_channels(s.sqlite_path):
        status: Status = "off" if s.offline else "ok" if ch.status in ("ok", "new") else "warn"
        detail = describe(ch, time.time() if now is None else now).split(" — ", 1)[-1]
        rows.append(Row(f"watch @{ch.name}", status, detail + (" (not read: TIPLINE_OFFLINE=true)" if s.offline else "")))
    from bot.watch_feeds import describe_feed
    from storage.watched_feeds import read_feeds

    for feed in read_feeds(s.sqlite_path):
        status = "off" if s.offline else "ok" if feed.status in ("ok", "new") else "warn"
        detail = describe_feed(feed, time.time() if now is None else now).split(" — ", 1)[-1]
        rows.append(Row(f"watch {feed.url}", status, detail + (" (not read: TIPLINE_OFFLINE=true)" if s.offline else "")))
    return rows


def account_row(s: Settings) -> Row:
    """The account reader (docs/watch.md): configured, installed, logged in? Nothing is sent to Telegram."""
    import importlib.util

    from bot.watch import account_configured, session_path

    if s.offline:
        return Row("watch account", "off", "TIPLINE_OFFLINE=true: nothing is read through the account")
    if not account_configured(s):
        return Row("watch account", "warn", "set both TIPLINE_TELEGRAM_API_ID and TIPLINE_TELEGRAM_API_HASH")
    if importlib.util.find_spec("telethon") is None:
        return Row("watch account", "warn", "Telethon is not installed: pip install 'tipline[account]'")
    session = session_path(s)
    if not session.exists():
        return Row("watch account", "warn", "no account logged in: tipline watch login")
    mode = session.stat().st_mode & 0o777
    if mode & 0o077:
        return Row("watch account", "warn", f"{session} is readable by others ({mode:o}): chmod 600 it")
    return Row("watch account", "ok", f"on: channels without a public preview are read through the logged-in "
               f"account, one request per {s.telegram_account_gap_s:g} s at most (session {session})")


def feed_rows(s: Settings, now: float | None = None) -> list[Row]:
    """One row per fact-checker's feed `tipline feeds add` stored (docs/feeds.md) with the status of its last read,
    read-only from the data dir's database: warn when it cannot be read."""
    import time

    from bot.feeds import describe_feed
    from storage.factcheck_feeds import read_feeds

    rows = []
    for feed in read_feeds(s.sqlite_path):
        status: Status = "off" if s.offline else "ok" if feed.status in ("ok", "new") else "warn"
        detail = describe_feed(feed, time.time() if now is None else now).split(" — ", 1)[-1]
        rows.append(Row(f"feed {feed.label}", status, detail + (" (not read: TIPLINE_OFFLINE=true)" if s.offline else "")))
    return rows


def leaves_machine(s: Settings) -> str:
    """What from a message leaves the machine, and to whom, in one line (bot/outflow.py says it to users too),
    naming the fact-checkers' feeds read when there are some."""
    from storage.factcheck_feeds import read_feeds

    return describe(outflow(s, stored_feeds=len(read_feeds(s.sqlite_path))))


def format_table(rows: list[Row]) -> str:
    width = max(len(r.service) for r in rows)
    lines = [f"{'service'.ljust(width)}  status  detail"]
    lines += [f"{r.service.ljust(width)}  {r.status.ljust(6)}  {r.detail}" for r in rows]
    return "\n".join(lines)
