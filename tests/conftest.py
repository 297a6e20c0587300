"""Shared fixtures: real SQLite, real embedded Qdrant and the real ONNX model, in temp dirs.

Unit tests cannot reach the network: any connection to a non-loopback address fails the test
(the idea of python-telegram-bot's tests/auxil/networking.py).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.app import App, build_app
from bot.settings import Settings
from core.model_files import prepare_default_model

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


def isolated_settings(data_dir: Path, model_dir: Path, **kw) -> Settings:
    """Settings for a test app: no developer's TIPLINE_* variables, no .env, no public GDELT endpoint."""
    with pytest.MonkeyPatch.context() as mp:
        for key in list(__import__("os").environ):
            if key.startswith("TIPLINE_"):
                mp.delenv(key)
        return Settings(data_dir=data_dir, embed_model_dir=model_dir, _env_file=None,
                        **{"gdelt_url": None, **kw})


@pytest.fixture
def settings(tmp_path: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    # Settings read the environment; make sure a developer's TIPLINE_* variables can't leak in.
    for key in list(__import__("os").environ):
        if key.startswith("TIPLINE_"):
            monkeypatch.delenv(key)
    return Settings(data_dir=tmp_path / "data", embed_model_dir=model_dir, _env_file=None, gdelt_url=None)


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[App]:
    async with build_app(settings) as a:
        yield a
