# The README's two commands are `make serve` and `make test`; CI runs `make test` through .ci/run.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test test-fast check lint install dst bench-cost bench-sqs bench-cluster record clients \
	compose-test containers

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

serve: $(STAMP)
	$(BIN)/okuri serve

lint: $(STAMP)
	$(BIN)/ruff check okuri tests compat integrations
	$(BIN)/lint-imports
	# compat/boto3_examples are user-style scripts; only their runner is held to --strict.
	$(BIN)/mypy okuri compat integrations/celery/okuri_celery \
		--exclude 'compat/boto3_examples/(?!run\.py|_aws_real_mode\.py)'

test: lint clients compose-test
	$(BIN)/python -m pytest --cov=okuri --cov-report=term --cov-fail-under=90 -p no:cacheprovider \
		--ignore=tests/compose

check: test

# The everyday tier: lint, types, unit tests and the simulator, no servers or SDK clients.
test-fast: lint
	$(BIN)/python -m pytest tests/unit tests/sim -q -p no:cacheprovider

dst: $(STAMP)
	$(BIN)/okuri dst --seeds 2000

bench-sqs: $(STAMP)
	$(BIN)/okuri bench sqs

bench-cluster: $(STAMP)
	$(BIN)/okuri bench cluster
	$(BIN)/okuri bench cluster --store s3

bench-cost: $(STAMP)
	$(BIN)/okuri bench cost

# Re-record every SDK session in compat/recordings/ from the real clients (compat/clients/);
# `make record CLIENTS=boto3` for some. A client whose program is not built is skipped, saying so.
record: $(STAMP) clients
	$(BIN)/python -m compat.record $(CLIENTS)

# The SDK scenario programs of compat/clients/ that tests/compat/test_live_clients.py and `make
# record` run: aws-sdk-js v3 from npm, aws-sdk-go v1 and v2 built in GOPATH mode against
# Debian's packaged sources (installed with apt-get when missing), and an older boto3 that speaks
# the query protocol in a virtualenv of its own (remade when its requirements.txt changes).
# Quick, and offline, when nothing changed.
# GOPATH's first entry holds the programs' shared, SDK-independent package (src/sqscore).
JS_CLIENT := compat/clients/js
GO_CLIENT := compat/clients/go
GOCODE := /usr/share/gocode
GO_PACKAGES := golang-go golang-github-aws-aws-sdk-go-dev golang-github-aws-aws-sdk-go-v2-dev
GO_SDKS := /usr/bin/go \
	$(GOCODE)/src/github.com/aws/aws-sdk-go/service/sqs/api.go \
	$(GOCODE)/src/github.com/aws/aws-sdk-go-v2/service/sqs/api_client.go
GO_SHARED := $(wildcard $(GO_CLIENT)/src/sqscore/*.go)
GO_BUILD := cd $(GO_CLIENT) && GO111MODULE=off GOFLAGS= CGO_ENABLED=0 \
	GOPATH=$(CURDIR)/$(GO_CLIENT):$(GOCODE) \
	GOCACHE=$(CURDIR)/$(GO_CLIENT)/bin/.cache go build

BOTO3_QUERY := compat/clients/boto3-query
BOTO3_QUERY_VENV := $(BOTO3_QUERY)/.venv

clients: $(JS_CLIENT)/node_modules/.package-lock.json $(GO_CLIENT)/bin/scenario-v1 \
	$(GO_CLIENT)/bin/scenario-v2 $(BOTO3_QUERY_VENV)/.installed

# Made anew (never upgraded in place) so it holds exactly the pins and what they need.
$(BOTO3_QUERY_VENV)/.installed: $(BOTO3_QUERY)/requirements.txt
	rm -rf $(BOTO3_QUERY_VENV)
	$(PYTHON) -m venv $(BOTO3_QUERY_VENV)
	$(BOTO3_QUERY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		--no-input -r $(BOTO3_QUERY)/requirements.txt
	touch $@

$(JS_CLIENT)/node_modules/.package-lock.json: $(JS_CLIENT)/package.json $(JS_CLIENT)/package-lock.json
	@command -v npm >/dev/null || { echo "make clients: npm not found; install Node.js 20+ with npm" >&2; exit 1; }
	cd $(JS_CLIENT) && npm ci --no-audit --no-fund
	touch $@

$(GO_SDKS) &:
	@if [ "$$(id -u)" = 0 ]; then sudo=; elif command -v sudo >/dev/null; then sudo=sudo; else \
		echo "make clients: run as root or install sudo, or apt-get install $(GO_PACKAGES)" >&2; \
		exit 1; fi; \
	command -v apt-get >/dev/null || { \
		echo "make clients: no apt-get; install Go and the Debian packages $(GO_PACKAGES)" >&2; \
		exit 1; }; \
	set -x; \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		$(GO_PACKAGES) </dev/null
	@for f in $(GO_SDKS); do [ -e $$f ] || { \
		echo "make clients: $$f is still missing after installing $(GO_PACKAGES)" >&2; exit 1; }; done

$(GO_CLIENT)/bin/scenario-%: $(GO_CLIENT)/%/main.go $(GO_SHARED) $(GO_SDKS)
	$(GO_BUILD) -o bin/scenario-$* ./$*

# compose.yaml booted for real (tests/compose): okuri's image on an S3 service, the bucket init
# and a Celery worker container, driven by pytest-docker. With a Docker engine it uses `docker
# compose`; elsewhere rootful podman, installing podman, runc, podman-compose and debootstrap
# (and the CNI dnsname plugin, by which service names resolve between containers) with apt-get
# when missing (as root or with sudo), and building the Python base image locally
# (tests/compose/images.py). Images are cached between runs and rebuilt only when inputs change.
COMPOSE_PACKAGES := podman runc podman-compose debootstrap \
	golang-github-containernetworking-plugin-dnsname
COMPOSE_TOOLS := /usr/bin/podman /usr/sbin/runc /usr/bin/podman-compose /usr/sbin/debootstrap \
	/usr/lib/cni/dnsname

compose-test: $(STAMP)
	@docker info >/dev/null 2>&1 || $(MAKE) --no-print-directory containers
	$(BIN)/python -m pytest tests/compose -p no:cacheprovider

containers: $(COMPOSE_TOOLS)

$(COMPOSE_TOOLS) &:
	@if [ "$$(id -u)" = 0 ]; then sudo=; elif command -v sudo >/dev/null; then sudo=sudo; else \
		echo "make containers: run as root or install sudo, or apt-get install $(COMPOSE_PACKAGES)" >&2; \
		exit 1; fi; \
	command -v apt-get >/dev/null || { \
		echo "make containers: no apt-get; install Docker, or $(COMPOSE_PACKAGES)" >&2; \
		exit 1; }; \
	set -x; \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		$(COMPOSE_PACKAGES) </dev/null
	@for f in $(COMPOSE_TOOLS); do [ -e $$f ] || { \
		echo "make containers: $$f is still missing after installing $(COMPOSE_PACKAGES)" >&2; \
		exit 1; }; done
