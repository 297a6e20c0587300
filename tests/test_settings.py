from pathlib import Path

from bot.settings import Settings


def test_settings_come_from_tipline_env_vars(monkeypatch, tmp_path):
    monkeypatch.setenv("TIPLINE_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("TIPLINE_ADMINS", "12345, U0ADMIN ,")
    monkeypatch.setenv("TIPLINE_TELEGRAM_TOKEN", "123:very-secret")
    monkeypatch.setenv("TIPLINE_HTTP_PORT", "9090")
    s = Settings(_env_file=None)
    assert s.data_dir == tmp_path / "d"
    assert s.sqlite_path == tmp_path / "d" / "tipline.sqlite3"
    assert s.admins == ["12345", "U0ADMIN"]
    assert s.http_port == 9090
    assert s.telegram_token.get_secret_value() == "123:very-secret"
    assert "very-secret" not in repr(s) and "very-secret" not in str(s.model_dump())


def test_defaults_run_offline(monkeypatch):
    import os

    for key in [k for k in os.environ if k.startswith("TIPLINE_")]:
        monkeypatch.delenv(key)
    s = Settings(_env_file=None)
    assert s.data_dir == Path("data") and s.qdrant_url is None and s.llm_base_url is None
    assert s.uses_default_model and s.admins == []


def test_the_model_cache_defaults_to_the_data_dir_and_can_be_shared(monkeypatch, tmp_path):
    for key in [k for k in __import__("os").environ if k.startswith("TIPLINE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("TIPLINE_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("TIPLINE_MODEL_CACHE_DIR", "")  # empty: the default, not the current directory
    s = Settings(_env_file=None)
    assert s.models_dir == tmp_path / "d" / "models" and s.model_dir == tmp_path / "d" / "models" / "all-MiniLM-L6-v2-int8"
    monkeypatch.setenv("TIPLINE_MODEL_CACHE_DIR", str(tmp_path / "cache"))
    s = Settings(_env_file=None)
    assert s.models_dir == tmp_path / "cache" and s.model_dir == tmp_path / "cache" / "all-MiniLM-L6-v2-int8"


def test_checks_run_at_once_depend_on_whether_they_wait_on_a_language_model(monkeypatch):
    """Unset TIPLINE_WORKERS: 16 with an LLM (its checks mostly wait on it), 4 without (CPU work); set, it wins."""
    for key in [k for k in __import__("os").environ if k.startswith("TIPLINE_")]:
        monkeypatch.delenv(key)
    assert Settings(_env_file=None).check_workers == 4
    assert Settings(_env_file=None, llm_api_key="sk-test").check_workers == 16
    assert Settings(_env_file=None, llm_base_url="http://127.0.0.1:11434/v1").check_workers == 16
    assert Settings(_env_file=None, llm_api_key="sk-test", offline=True).check_workers == 4  # offline: no LLM
    assert Settings(_env_file=None, llm_api_key="sk-test", workers=2).check_workers == 2
    monkeypatch.setenv("TIPLINE_WORKERS", "8")
    assert Settings(_env_file=None).check_workers == 8


async def test_the_running_bots_queue_takes_its_worker_count_from_the_settings(settings):
    """The composition root (`build_chat`, what `tipline run` builds) hands the queue `check_workers`."""
    from bot.app import build_app
    from bot.chat_app import build_chat

    with_llm = settings.model_copy(update={"llm_base_url": "http://127.0.0.1:9/v1"})
    for s, expected in ((settings, 4), (with_llm, 16)):
        async with build_app(s) as app:
            chat = build_chat(s, app)
            assert chat.queue is not None and chat.queue.workers == expected
