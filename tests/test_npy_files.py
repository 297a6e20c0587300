"""core/encoders/npy_files.py: .npy/.npz reads go through one lock (np.load's header parse races on CPython 3.11)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from core.encoders import npy_files
from core.encoders.npy_files import map_array, read_arrays


def test_it_reads_what_numpy_wrote(tmp_path: Path) -> None:
    np.savez(tmp_path / "t.npz", ids=np.arange(5), model=np.array("m"))
    got = read_arrays(tmp_path / "t.npz", ("ids", "model"))
    assert got["ids"].tolist() == [0, 1, 2, 3, 4] and str(got["model"]) == "m"
    np.save(tmp_path / "v.npy", np.eye(3, dtype=np.float32))
    mapped = map_array(tmp_path / "v.npy")
    assert type(mapped) is np.ndarray and not mapped.flags.writeable and mapped[1, 1] == 1.0


def test_a_read_waits_while_another_thread_parses_a_header(tmp_path: Path) -> None:
    np.save(tmp_path / "v.npy", np.zeros(4))
    done = threading.Event()

    def read() -> None:
        map_array(tmp_path / "v.npy")
        done.set()

    with npy_files._HEADERS:  # another thread's header parse in progress
        t = threading.Thread(target=read)
        t.start()
        assert not done.wait(0.3)
    assert done.wait(10)
    t.join()
