"""Watch: reading the outside world on a schedule: public Telegram channels and news and fact-check feeds.

Public API:

    from core.watch.telegram_preview import PreviewReader, channel_name   # t.me/s/<name> web previews
    from core.watch.account_reader import AccountReader                  # channels without a preview (MTProto)
    from core.watch.mtproto import telethon_client                       # the only module importing telethon
    from core.watch.feed_reader import FeedReader                        # news outlets' RSS/Atom as sources
    from core.watch.factcheck_feed import FactCheckFeedReader            # fact-checkers' feeds -> fact-checks
    from core.watch.recommended_feeds import load_recommended            # the curated list of those feeds
    from core.watch.preview_photos import PreviewPhotos                  # posts' photos, perceptually hashed

public_session.py is the one cookie-less HTTP session they share; feed_fetch.py one conditional GET.
"""
