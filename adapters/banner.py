"""What `tipline run` says when it has started: version, data dir, mode, each adapter and where it
listens, the providers that are on. A few lines on stderr, so an operator reading `docker compose logs`
sees at once what this process does (before, it printed nothing at all).

    tipline 0.1.0 · data dir /data · 1312 fact-checks
    mode: LLM gpt-5-mini at https://api.openai.com/v1; search queries go to GDELT
    telegram: long polling as @tipline_bot
    http: http://0.0.0.0:8080 (Slack /slack/events · REST API /v1/checks · /healthz · /metrics)
    evidence: knowledge base, evidence index, GDELT, linked sites
    vectors: embedded, /data/qdrant-edge · embeddings: in-process sentence-transformers/all-MiniLM-L6-v2
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from bot.settings import Settings
from bot.outside import LINKS, LOCAL, NAMES

OPENAI_URL = "https://api.openai.com/v1"
LOCAL_NAMES = {"knowledge": "knowledge base", "evidence_index": "evidence index"}


def tipline_version() -> str:
    try:
        return version("tipline")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


@dataclass(frozen=True)
class Started:
    """What the composition root started, as the banner describes it."""

    factchecks: int
    evidence_sources: list[str]
    llm: bool
    vectors: str  # "embedded, PATH" or the server URL
    telegram: str | None = None  # "long polling as @name" / "webhook URL as @name"
    slack: str | None = None  # "HTTP mode" / "Socket Mode"
    rest_api: bool = False
    http: str | None = None  # "http://HOST:PORT", None when the port could not be taken


def source_name(name: str) -> str:
    return LOCAL_NAMES.get(name) or ("linked sites" if name == LINKS else NAMES.get(name, name))


def mode_line(settings: Settings, started: Started) -> str:
    if settings.offline:
        return "mode: offline (TIPLINE_OFFLINE=true): nothing leaves the machine"
    outside = [source_name(s) for s in started.evidence_sources if s not in LOCAL and s != LINKS]
    if started.llm:
        where = settings.llm_base_url or OPENAI_URL
        line = f"mode: LLM {settings.llm_model} at {where}"
    else:
        line = "mode: no language model (verdicts only from matching fact-checks)"
    if outside and started.llm:
        line += f"; search queries go to {', '.join(outside)}"
    elif outside:
        # Offline, search results would only be listed, never judged: they are not asked (core/engine.py).
        line += f"; {', '.join(outside)} configured but used only with a language model: nothing leaves the machine"
    return line


def banner(settings: Settings, started: Started) -> list[str]:
    lines = [f"tipline {tipline_version()} · data dir {settings.data_dir} · {started.factchecks} fact-checks",
             mode_line(settings, started)]
    if started.telegram:
        lines.append(f"telegram: {started.telegram}")
    if started.slack:
        lines.append(f"slack: {started.slack}")
    if started.http:
        routes = []
        if started.slack == "HTTP mode":
            routes.append("Slack /slack/events")
        if started.rest_api:
            routes.append("REST API /v1/checks, /v1/factchecks")
        if started.telegram and started.telegram.startswith("webhook"):
            routes.append("Telegram webhook")
        routes += ["/healthz", "/metrics"]
        lines.append(f"http: {started.http} ({' · '.join(routes)})")
    else:
        lines.append("http: not listening (the port is taken; /healthz and /metrics are off)")
    lines.append("evidence: " + (", ".join(source_name(s) for s in started.evidence_sources) or "none"))
    embedder = f"server {settings.embed_url}" if settings.embed_url else f"in-process {settings.embed_model}"
    lines.append(f"vectors: {started.vectors} · embeddings: {embedder}")
    return lines
