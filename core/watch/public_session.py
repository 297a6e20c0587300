"""An HTTP session for reading public pages (t.me previews, their photos): made on first use, no cookies kept,
tipline's User-Agent; closed by whoever made it, never when the caller passed its own."""

from __future__ import annotations

import aiohttp

from core.evidence.fetch import USER_AGENT


class PublicSession:
    def __init__(self, timeout_s: float, accept: str, session: aiohttp.ClientSession | None = None):
        self.timeout_s = timeout_s
        self.accept = accept
        self._session = session
        self._own = session is None

    def get(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.timeout_s), cookie_jar=aiohttp.DummyCookieJar(),
                headers={"User-Agent": USER_AGENT, "Accept": self.accept}, trust_env=True)
            self._own = True
        return self._session

    async def aclose(self) -> None:
        if self._own and self._session is not None and not self._session.closed:
            await self._session.close()
