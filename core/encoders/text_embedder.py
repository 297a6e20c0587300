"""What every part that embeds text needs from an embedder: the in-process model (core/encoders/embeddings.py)
or an embeddings server (core/encoders/remote_embeddings.py), chosen once at the composition root (bot/app.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class TextEmbedder(Protocol):
    """L2-normalised float32 vectors, one row per text, in the order given."""

    model_name: str
    dim: int

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray: ...

    async def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def clear_cache(self) -> None:
        """Forget every remembered vector, so a timed path measures a message never seen before."""
        ...
