"""The one configuration object. Read once at start-up and passed down; nothing else reads the environment."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from core.embeddings import DEFAULT_MODEL


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TIPLINE_", env_file=".env", env_file_encoding="utf-8",
                                      extra="ignore")

    data_dir: Path = Field(default=Path("./data"), description="SQLite, embedded Qdrant and the model live here.")

    # Embeddings
    embed_model: str = Field(default=DEFAULT_MODEL, description="Any fastembed text model; the default is offline.")
    embed_batch_size: int = 16
    embed_model_dir: Path | None = Field(default=None, description="Where the offline default model is assembled "
                                         "(default <data_dir>/models/all-MiniLM-L6-v2-int8).")

    # Qdrant: embedded under the data dir unless a server URL is given.
    qdrant_url: str | None = None
    qdrant_api_key: SecretStr | None = None
    factchecks_collection: str = "factchecks"

    # Claim matching: probabilities from the calibrated re-ranker. None = use the calibrated values
    # shipped with the re-ranker weights (docs/matching.md says how they were chosen).
    match_auto_threshold: float | None = None
    match_suggest_threshold: float | None = None
    match_candidates: int = 40

    # Intake
    max_input_chars: int = 4096

    # LLM (optional; without it the engine runs in offline mode)
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_model: str = "gpt-4o-mini"

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
    http_host: str = "127.0.0.1"
    http_port: int = 8080

    # Who may change global settings such as trusted domains: comma-separated Telegram and Slack user
    # ids. In Telegram groups, that chat's own administrators may change the chat's settings too.
    admins: Annotated[list[str], NoDecode] = Field(default_factory=list)

    seed_on_start: bool = Field(default=True, description="Load the bundled seed knowledge base on first run.")

    @field_validator("admins", mode="before")
    @classmethod
    def _split_admins(cls, v: object) -> object:
        return [x.strip() for x in v.split(",") if x.strip()] if isinstance(v, str) else v

    @field_validator("data_dir", mode="before")
    @classmethod
    def _expand(cls, v: object) -> object:
        return Path(v).expanduser() if isinstance(v, (str, Path)) else v

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "tipline.sqlite3"

    @property
    def qdrant_path(self) -> Path:
        return self.data_dir / "qdrant"

    @property
    def model_dir(self) -> Path:
        return self.embed_model_dir or self.data_dir / "models" / "all-MiniLM-L6-v2-int8"

    @property
    def uses_default_model(self) -> bool:
        return self.embed_model == DEFAULT_MODEL
