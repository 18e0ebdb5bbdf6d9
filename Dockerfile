# okuri's image: `okuri serve` as a non-root user, configured only through OKURI_* variables
# (README.md lists them). SQS on 8080, /healthz, /readyz and /metrics on 9090. The image has no
# curl: probe readiness with python, as compose.yaml's healthcheck does.
#
#   docker build -t okuri .
#   docker run --rm -p 127.0.0.1:8080:8080 -p 127.0.0.1:9090:9090 okuri
#
# The stage `celery-smoke` (built by compose.yaml's celery profile and by `make compose-test`)
# adds Celery, the okuri Celery extension and the Celery smoke app; the last stage, okuri itself,
# is the default target.
#
# OKURI_BASE_IMAGE names the Python image every stage starts from. Anything that behaves like the
# official slim image will do (a `pip` on PATH, `groupadd` and `useradd`): `make compose-test`
# passes one it builds locally, on machines that cannot pull from a registry.

ARG OKURI_BASE_IMAGE=python:3.12-slim
FROM ${OKURI_BASE_IMAGE} AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN groupadd --system --gid 10001 okuri \
    && useradd --system --uid 10001 --gid okuri --home-dir /var/lib/okuri --create-home okuri


FROM base AS celery-smoke
COPY integrations/celery /src/integrations/celery
RUN pip install "celery[sqs,s3]>=5.5" /src/integrations/celery && rm -rf /src
COPY tests/smoke/celery/smoke_app.py /app/smoke_app.py
WORKDIR /app
USER 10001:10001
CMD ["celery", "-A", "smoke_app", "worker", "--loglevel=INFO"]


FROM base AS okuri
COPY pyproject.toml README.md /src/
COPY okuri /src/okuri
RUN pip install /src && rm -rf /src
WORKDIR /var/lib/okuri
# okuri binds loopback unless told otherwise; in a container, every interface is what -p reaches.
ENV OKURI_DATA_DIR=/var/lib/okuri/data \
    OKURI_LISTEN=0.0.0.0:8080 \
    OKURI_HEALTH_LISTEN=0.0.0.0:9090
USER 10001:10001
EXPOSE 8080 9090
CMD ["okuri", "serve"]
