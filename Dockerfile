FROM python:3.11-slim
WORKDIR /srv
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DATA_DIR=/data
# The skills agent's shell runs inside bubblewrap (the container needs user namespaces for
# it); LibreOffice Impress, Writer and Calc, with Noto CJK fonts, draw the PowerPoint
# agent's slide previews (PPTX_PREVIEWS), research reports' PDFs and /file/preview's pages;
# Tesseract reads scanned PDFs and photos of pages (OCR_LANGS: English, Simplified Chinese).
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap libreoffice-impress \
       libreoffice-writer libreoffice-calc fonts-noto-cjk \
       tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim \
    && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY migrations ./migrations
# Compiled once here: with PYTHONDONTWRITEBYTECODE no start would keep what it compiled,
# and uvicorn imports the app from /srv/app, so every start compiled it again (a third of
# a second of each start: bench/README.md, "A worker before its first turn").
RUN pip install --no-cache-dir . && python -m compileall -q app migrations
EXPOSE 8888
VOLUME ["/data"]
CMD ["uvicorn", "app.main:app", "--host", "0.0.0.0", "--port", "8888", "--http", "app.api.head_timeout:HeadTimeoutProtocol", "--proxy-headers", "--timeout-graceful-shutdown", "30"]
