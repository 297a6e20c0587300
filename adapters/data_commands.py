"""`tipline ingest`, `tipline forget` and `tipline vectors`: the commands that change what a data dir holds. Each
hands its work to a running `tipline run` (its REST API) when that process holds the data dir."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from adapters.cli_support import EXIT_FAILED, EXIT_USAGE, ProgressBar, settings_for
from bot.app import SetupError, build_app
from storage.vectors import DataDirInUse


async def cmd_ingest(args: argparse.Namespace) -> int:
    from bot.ingest_files import ingest_source

    mapping = {}
    for item in args.map or []:
        field, sep, column = item.partition("=")
        if not sep or not field or not column:
            print(f"tipline: --map takes FIELD=COLUMN, not {item!r}", file=sys.stderr)
            return EXIT_USAGE
        mapping[field.strip()] = column.strip()
    settings = settings_for(args)
    token = args.token or (settings.api_token.get_secret_value() if settings.api_token else None)
    if args.server:
        return await _ingest_remote(args.server, token, args.sources, mapping)
    failed = 0
    try:
        async with build_app(settings) as app:
            for source in args.sources:
                report = await ingest_source(app.kb, source, mapping or None, progress=ProgressBar(f"ingest {source}"),
                                             on_row_error=lambda m: print(f"  skipped {m}", file=sys.stderr),
                                             on_row_warning=lambda m: print(f"  note {m}", file=sys.stderr))
                failed += _print_report(source, report)
            print(f"Knowledge base: {await app.kb.count()} fact-checks.")
    except DataDirInUse as exc:
        # A running bot holds the data dir: hand the files to it when its REST API answers here.
        from adapters.ingest_client import answers, local_server

        server = local_server(settings)
        if not token or not await answers(server):
            raise SetupError(f"the data dir {settings.data_dir} is in use by another tipline process (a running "
                             "`tipline run`?): send the files to it with `tipline ingest --server URL` (the bot "
                             "needs TIPLINE_API_TOKEN), or stop it first, or use a Qdrant server "
                             "(TIPLINE_QDRANT_URL)") from exc
        print(f"tipline: the data dir is in use by a running tipline; sending the files to it at {server}",
              file=sys.stderr)
        return await _ingest_remote(server, token, args.sources, mapping)
    return EXIT_FAILED if failed else 0


async def cmd_forget(args: argparse.Namespace) -> int:
    """`tipline forget --user telegram:4242`: what `/forget me` does for that person, from the command line (a
    right-to-erasure request that came by mail). A running bot holding the data dir does it through its REST
    API (`POST /v1/forget`), as `tipline ingest` hands files over."""
    platform, sep, user = args.user.partition(":")
    if not sep or not platform.strip() or not user.strip():
        print(f"tipline: --user takes PLATFORM:ID (telegram:4242, slack:U0123ABC), not {args.user!r}", file=sys.stderr)
        return EXIT_USAGE
    platform, user = platform.strip().lower(), user.strip()
    settings = settings_for(args)
    token = args.token or (settings.api_token.get_secret_value() if settings.api_token else None)
    from bot.app import check_data_dir, edge_dir
    from bot.personal import Privacy
    from storage.message_vectors import MessageVectors
    from storage.sqlite import Database
    from storage.vector_backends import open_vector_store

    check_data_dir(settings.data_dir)
    try:
        # The dimensions only shape new collections; forgetting deletes from the ones there are.
        vectors = await open_vector_store(
            dim=1, path=edge_dir(settings), legacy_path=settings.qdrant_path, url=settings.qdrant_url,
            api_key=settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None, load_all=False)
    except DataDirInUse as exc:
        from adapters.ingest_client import answers, forget_remote, local_server

        server = local_server(settings)
        if not token or not await answers(server):
            raise SetupError(f"the data dir {settings.data_dir} is in use by another tipline process (a running "
                             "`tipline run`?): give it TIPLINE_API_TOKEN so this command can ask it, ask the person "
                             "to send /forget me, or stop it first") from exc
        print(f"tipline: the data dir is in use by a running tipline; asking it at {server}", file=sys.stderr)
        done = await forget_remote(server, token, f"{platform}:{user}")
        print(_forgotten_line(args.user, done))
        return 0
    try:
        db = await Database.open(settings.sqlite_path)
        try:
            names = await vectors.collection_names() + list(await vectors.aliases())
            messages = MessageVectors(vectors, settings.messages_collection) \
                if settings.messages_collection in names else None
            forgotten = await Privacy(db, messages=messages, running_wait_s=0).forget(platform, user)
        finally:
            await db.close()
    finally:
        await vectors.aclose()
    print(_forgotten_line(args.user, {"checks": forgotten.checks, "votes": forgotten.votes, "jobs": forgotten.jobs,
                                      "messages": len(forgotten.messages)}))
    return 0


def _forgotten_line(who: str, done: dict[str, int]) -> str:
    return (f"Deleted everything stored of {who} (checks: {done['checks']}, votes: {done['votes']}, queued requests: "
            f"{done['jobs']}, tracked messages: {done['messages']}); no copy is left in the data dir.")


def _print_report(source: str, report: Any) -> int:
    """The report's line (or its one-sentence failure); 1 when nothing was ingested."""
    if report.failed:
        print(f"tipline: nothing ingested from {source}: {report.failed}", file=sys.stderr)
        return 1
    print(f"{source}: {report.summary()}")
    return 0


async def _ingest_remote(server: str, token: str | None, sources: list[str], mapping: dict[str, str]) -> int:
    from adapters.ingest_client import IngestClient

    client = IngestClient(server, token)
    failed, total = 0, None
    for source in sources:
        report, count = await client.send(source, mapping or None)
        for message in report.errors:
            print(f"  skipped {message}", file=sys.stderr)
        for message in report.warnings:
            print(f"  note {message}", file=sys.stderr)
        failed += _print_report(source, report)
        total = count if count is not None else total
    if total is not None:
        print(f"Knowledge base at {server}: {total} fact-checks.")
    return EXIT_FAILED if failed else 0


async def cmd_vectors(args: argparse.Namespace) -> int:
    """`tipline vectors push --url URL`: the data dir's collections onto a Qdrant server (storage/vector_backends.py)."""
    from bot.app import edge_dir
    from storage.vector_backends import push_to_server

    settings = settings_for(args)
    url = args.url or settings.qdrant_url
    if not url:
        print("tipline: say which Qdrant server with --url (or TIPLINE_QDRANT_URL)", file=sys.stderr)
        return EXIT_USAGE
    key = args.api_key or (settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None)
    copied = await push_to_server(edge_dir(settings), url, api_key=key, legacy_path=settings.qdrant_path,
                                  replace=args.replace)
    for name, n in copied.items():
        print(f"{name}: {n} points")
    print(f"Done; the data dir is unchanged. Set TIPLINE_QDRANT_URL={url} to use the server.")
    return 0

