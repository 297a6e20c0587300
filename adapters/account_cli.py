"""`tipline watch login|logout`: the account reader's dedicated Telegram account (docs/watch.md, "The account
reader"). Login asks for the phone number, the code Telegram sends and the two-step verification password
(never echoed), with TIPLINE_TELEGRAM_API_ID / _HASH from the settings; the session is kept in the data
dir as `telegram-account.session`, readable by its owner only. A running `tipline run` starts reading
through it at its next start.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable

from bot.settings import Settings

EXIT_FAILED = 1


async def account_command(action: str, settings: Settings, *, ask: Callable[[str], str] = input,
                          ask_secret: Callable[[str], str] = getpass.getpass, factory: object = None) -> int:
    """`factory` makes the Telegram client (core/watch/mtproto.py `telethon_client` when None)."""
    from bot.watch import session_path

    if settings.offline and action == "login":
        print("TIPLINE_OFFLINE=true: nothing is sent to Telegram, so the account cannot be logged in.")
        return EXIT_FAILED
    if settings.telegram_api_id is None or settings.telegram_api_hash is None:
        if action == "logout" and not session_path(settings).exists():
            print("No account is logged in.")
            return 0
        print("Set TIPLINE_TELEGRAM_API_ID and TIPLINE_TELEGRAM_API_HASH first: an app's id and hash from "
              "my.telegram.org (API development tools), made with the dedicated account.")
        return EXIT_FAILED
    try:
        from core.watch import mtproto
    except ImportError:
        print("The account reader needs Telethon: pip install 'tipline[account]'.")
        return EXIT_FAILED
    kw = {"factory": factory} if factory is not None else {}
    session = session_path(settings)
    api_id, api_hash = settings.telegram_api_id, settings.telegram_api_hash.get_secret_value()
    if action == "logout":
        print(await mtproto.logout(session, api_id, api_hash, **kw))  # type: ignore[arg-type]
        return 0
    print("This logs in the account tipline reads channels without a public preview with. Use a dedicated "
          "number, not a person's: Telegram may limit or ban accounts that automate (docs/watch.md).")
    try:
        done = await mtproto.login(session, api_id, api_hash, ask=ask, ask_secret=ask_secret, **kw)  # type: ignore[arg-type]
    except mtproto.LoginFailed as exc:
        print(str(exc))
        return EXIT_FAILED
    if done.already:
        print(f"Already logged in as {done.who}; `tipline watch logout` ends the session.")
    else:
        print(f"Logged in as {done.who}. The session is {session} (owner-only); a running tipline reads "
              "through it after a restart.")
    return 0
