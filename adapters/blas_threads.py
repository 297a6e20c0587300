"""numpy's OpenBLAS on one thread from the moment it loads: adapters/main.py imports this before anything
imports numpy.

Every app caps BLAS at one thread anyway (bot/app.py `one_blas_thread`, which says why). Set here, in the
environment OpenBLAS reads as it loads, it starts no second thread at all: `import numpy` and one small
product took a fifth less CPU (docs/decisions/2026-11-29-notes-from-code.md), most of it the idle
thread's start and spinning. A value the user set is kept; processes tipline starts (index builds,
bench runs) inherit it, as they would set it themselves.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
