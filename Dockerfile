# The image of every Agora process in compose.yaml (web, worker, the one-shot migrate); see
# docs/production.md, "With containers".
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
# Requirements first: the dependency layer is rebuilt only when they change, not on every edit. The
# lock (docs/installing.md) pins the whole tree with the hashes of its files, so pip installs it as
# it is (--no-deps) and checks that nothing is missing.
COPY requirements.lock .
RUN pip install --no-deps --require-hashes -r requirements.lock && pip check

COPY . .
# Static files belong to the image (WhiteNoise serves them); collecting needs no database or secret.
RUN python manage.py collectstatic --noinput

RUN useradd --system --create-home --uid 10001 agora
USER agora

EXPOSE 8000
# Without --proxy-headers: the image may be published directly, where X-Forwarded-For is whatever a
# client writes. Behind the documented proxy, run it with --proxy-headers and BEHIND_HTTPS_PROXY=1.
CMD ["python", "-m", "agora.web", "-b", "0.0.0.0", "-p", "8000", "agora.asgi:application"]
