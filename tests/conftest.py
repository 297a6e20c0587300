"""Shared fixtures: real SQLite, real embedded Qdrant and the real ONNX model, in temp dirs.

Unit tests cannot reach the network: any connection to a non-loopback address fails the test
(the idea of python-telegram-bot's tests/auxil/networking.py).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from bot.app import App, build_app
from bot.settings import Settings
from core.encoders.model_files import prepare_default_model

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_local(address: object) -> bool:
    if isinstance(address, tuple) and address:
        host = str(address[0])
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host.split("%")[0]).is_loopback
        except ValueError:
            return False
    return True  # AF_UNIX paths


def _guarded_connect(self: socket.socket, address: object):
    if not _is_local(address):
        raise AssertionError(f"test tried to reach the network: {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: object):
    if not _is_local(address):
        raise AssertionError(f"test tried to reach the network: {address!r}")
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True, scope="session")
def no_network() -> None:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    yield
    socket.socket.connect = _real_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_default_model(tmp_path_factory.mktemp("model"))


def model_cache(model_dir: Path) -> Path:
    """The files derived from the models (USE's 76 MB of arrays and its 5 MB tokenizer, the e5 ONNX graph),
    kept once per session beside its MiniLM files (`model_dir`) instead of in every test's data dir: USE
    then loads in 0.17 s of CPU in each app the suite builds, not 1.3 s writing them into a new data dir
    or 81 MB copied with the seeded template. Every file there is keyed on its package's version."""
    return model_dir.with_name(f"{model_dir.name}-cache")


def subprocess_env(model_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a tipline process or tool a test starts: no developer's TIPLINE_* variables, the
    session's model files and model cache (`model_cache`), no public GDELT endpoint; `extra` on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_")}
    env |= {"TIPLINE_EMBED_MODEL_DIR": str(model_dir), "TIPLINE_MODEL_CACHE_DIR": str(model_cache(model_dir)),
            "TIPLINE_GDELT_URL": ""}
    return env | extra


def isolated_settings(data_dir: Path, model_dir: Path, **kw) -> Settings:
    """Settings for a test app: no developer's TIPLINE_* variables, no .env, no public GDELT endpoint,
    the session's model cache (`model_cache`) unless `kw` names another."""
    with pytest.MonkeyPatch.context() as mp:
        for key in list(__import__("os").environ):
            if key.startswith("TIPLINE_"):
                mp.delenv(key)
        return Settings(data_dir=data_dir, embed_model_dir=model_dir, _env_file=None,
                        **{"gdelt_url": None, "model_cache_dir": model_cache(model_dir), **kw})


@dataclass(frozen=True)
class SeededDataDir:
    """A data dir as the first `build_app` leaves it: the seed knowledge base embedded by both models.

    That first start costs ~5.5 s of CPU (MiniLM embedding the seed's 107 claims and titles: 4.9 s of it),
    and every test app paid it; a copy costs ~0.2 s and the app's start on it 0.8 s of CPU. A test's app
    then starts on an existing data dir, as every start after the first one does; the first start itself
    is what builds this template (once per worker; a seeding that fails fails every test that copies it),
    and tests/test_setup_script.py seeds a new data dir through `scripts/setup` too. A copy suits
    settings with the default models and collections (a test that changes the model on a copy re-embeds
    it, e.g. tests/test_remote_embeddings.py: that is its point)."""

    path: Path

    def copy_to(self, data_dir: Path) -> Path:
        """Fill a new (or empty) `data_dir` with the seeded one; returns `data_dir`."""
        if data_dir.exists():
            data_dir.rmdir()  # an empty dir from mktemp; a dir with something in it is an error here
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        try:  # Qdrant Edge preallocates ~500 MB of sparse files per data dir (2.4 MB used): keep them sparse
            subprocess.run(["cp", "-a", "--sparse=always", str(self.path), str(data_dir)], check=True,
                           capture_output=True)
        except (OSError, subprocess.CalledProcessError):  # not GNU cp
            shutil.rmtree(data_dir, ignore_errors=True)
            shutil.copytree(self.path, data_dir)
        return data_dir


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> SeededDataDir:
    settings = isolated_settings(tmp_path_factory.mktemp("seeded") / "data", model_dir)

    async def first_start() -> None:
        async with build_app(settings):
            pass

    # Its own thread and event loop: session-, module- and function-scoped loops all ask for this.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, first_start()).result()
    return SeededDataDir(settings.data_dir)


@pytest.fixture
def settings(tmp_path: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch, seeded: SeededDataDir) -> Settings:
    # Settings read the environment; make sure a developer's TIPLINE_* variables can't leak in.
    for key in list(__import__("os").environ):
        if key.startswith("TIPLINE_"):
            monkeypatch.delenv(key)
    # An already seeded data dir (a copy): see SeededDataDir.
    return Settings(data_dir=seeded.copy_to(tmp_path / "data"), embed_model_dir=model_dir, _env_file=None,
                    gdelt_url=None, model_cache_dir=model_cache(model_dir))


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[App]:
    async with build_app(settings) as a:
        yield a


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tme():
    """A local t.me serving public channel previews, one per test module (tests/fakes/telegram_preview.py)."""
    from tests.fakes.telegram_preview import FakeTelegramPreview

    fake = await FakeTelegramPreview().start()
    yield fake
    await fake.stop()
