# The README's two commands are `make serve` and `make test`; CI runs `make test` through .ci/run.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test check lint install dst bench-cost bench-sqs bench-native bench-cluster bench-celery record \
	clients laravel compose-test compose-tools containers proto promtool chromium

RUNTIME := $(VENV)/.runtime

# pip's flags for every install here. Forgetting the old name removes this checkout's install
# under the distribution name it had before okuri-queue (or PyPI's unrelated `okuri`, never wanted
# here) and the metadata setuptools left for it in the checkout.
PIP := $(BIN)/python -m pip --disable-pip-version-check --no-input
PIP_FORGET_OLD_NAME := { $(PIP) uninstall --quiet --yes okuri >/dev/null 2>&1 || true; \
	rm -rf okuri.egg-info; }

# `make serve` needs okuri's runtime dependencies and the README quickstarts' SQS clients (boto3
# and the AWS CLI, the `clients` extra, bounded to okuri's botocore); the test toolchain comes
# with `make test`.
$(RUNTIME): pyproject.toml
	@echo "Installing okuri, its runtime dependencies and the quickstarts' clients (boto3, AWS CLI)" \
		"into $(VENV) (first run only: up to a minute and a half)..."
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(PIP_FORGET_OLD_NAME)
	@$(PIP) install --quiet -e '.[clients]'
	@touch $@

$(STAMP): pyproject.toml
	@echo "Installing okuri with its test and lint toolchain into $(VENV) (first run only)..."
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	@$(PIP_FORGET_OLD_NAME)
	$(PIP) install --quiet -e '.[dev]'
	touch $(STAMP) $(RUNTIME)

install: $(STAMP)

serve: $(RUNTIME)
	$(BIN)/okuri serve

lint: $(STAMP)
	$(BIN)/ruff check bench okuri tests compat integrations
	$(BIN)/lint-imports
	# compat/boto3_examples are user-style scripts; only their runner is held to --strict.
	$(BIN)/mypy bench okuri compat integrations/celery/okuri_celery integrations/kombu/okuri_kombu \
		--exclude 'compat/boto3_examples/(?!run\.py|_aws_real_mode\.py)'

# One pytest worker per core: most tests wait on real servers and clients, so two workers on two
# cores took 837 s where one took 1,207 s (tests/README.md). The compose stack (tests/compose:
# image builds, about ten minutes on a fresh machine, then the stack booted) runs beside them,
# its output in $(COMPOSE_LOG), summed up at the end; `make test` fails if either fails.
COMPOSE_LOG := .compose-test.log

test: lint clients compose-tools promtool chromium
	@echo "make test: the compose stack (tests/compose) boots beside the other tests; its log: $(COMPOSE_LOG)"
	@$(BIN)/python -m pytest tests/compose -p no:cacheprovider >$(COMPOSE_LOG) 2>&1 & stack=$$!; \
	trap 'kill $$stack 2>/dev/null' INT TERM; \
	$(BIN)/python -m pytest --cov=okuri --cov-report=term --cov-fail-under=90 -p no:cacheprovider \
		--ignore=tests/compose --durations=25 -n auto; tests=$$?; \
	wait $$stack; compose=$$?; \
	echo "--- tests/compose (the compose stack), run beside the tests above: exit $$compose"; \
	if [ $$compose -eq 0 ]; then tail -n 1 $(COMPOSE_LOG); else tail -n 80 $(COMPOSE_LOG); fi; \
	[ $$tests -eq 0 ] && [ $$compose -eq 0 ]

# The everyday tier: lint and types, unit tests, the store contract (on a local directory and on a
# real moto S3 server) and 100 simulation seeds; no okuri servers or SDK clients. The tests run
# in one pytest worker per core. Times are in the README.
check: lint
	$(BIN)/python -m pytest tests/unit tests/store -q -p no:cacheprovider -m "not slow" -n auto
	$(BIN)/okuri dst --seeds 100

# Regenerate the native API's gRPC modules (okuri/api/v1/) after changing its .proto (beside
# them); tests/unit/test_grpc_generated.py fails until they are regenerated.
proto: $(STAMP)
	$(BIN)/python -m okuri.api.generate

dst: $(STAMP)
	$(BIN)/okuri dst --seeds 2000

# The benchmarks live beside okuri, not in it (bench/, docs/design.md): run from this checkout.
bench-sqs: $(STAMP)
	$(BIN)/python -m bench sqs

# The native API (batches of 100) beside the SQS surface (batches of 10) of one server, one run.
bench-native: $(STAMP)
	$(BIN)/python -m bench native

# One Celery load on okuri (okuri:// and sqs://), Redis and RabbitMQ (Debian's redis-server and
# rabbitmq-server; a missing one is skipped, saying what to install), side by side.
bench-celery: $(STAMP)
	$(BIN)/python -m bench celery

bench-cluster: $(STAMP)
	$(BIN)/python -m bench cluster
	$(BIN)/python -m bench cluster --store s3

bench-cost: $(STAMP)
	$(BIN)/python -m bench cost

# Re-record every SDK session in compat/recordings/ (vcrpy cassettes) from the real clients
# (compat/clients/): vcrpy records the Python ones, a recording proxy the others.
# `make record CLIENTS=boto3` for some. A client whose program is not built is skipped, saying so.
record: $(STAMP) clients
	$(BIN)/python -m compat.record $(CLIENTS)

# The SDK scenario programs of compat/clients/ that tests/compat/test_live_clients.py and `make
# record` run: aws-sdk-js v3 from npm, aws-sdk-go v1 and v2 built in GOPATH mode against
# Debian's packaged sources (installed with apt-get when missing), an older boto3 that speaks
# the query protocol in a virtualenv of its own (remade when its requirements.txt changes), and
# PHP with Debian's Laravel for tests/smoke/laravel (`laravel`, below).
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
	$(GO_CLIENT)/bin/scenario-v2 $(BOTO3_QUERY_VENV)/.installed laravel

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

# $(call apt_install,PACKAGES,TARGET): one shell command that runs apt-get update, then installs
# PACKAGES, as root or through sudo; it fails saying (as `make TARGET`) what to install when it
# cannot.
define apt_install
if [ "$$(id -u)" = 0 ]; then sudo=; elif command -v sudo >/dev/null; then sudo=sudo; else \
	echo "make $(2): run as root or install sudo, or apt-get install $(1)" >&2; \
	exit 1; fi; \
command -v apt-get >/dev/null || { \
	echo "make $(2): no apt-get; install the Debian packages $(1) or their equivalents" >&2; \
	exit 1; }; \
set -x; \
$$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	$(1) </dev/null
endef

# Debian's chromium and chromium-driver drive the web console's browser test
# (tests/surface/test_console.py, headless through selenium); installed with apt-get when missing.
CHROMEDRIVER := /usr/bin/chromedriver

chromium: $(CHROMEDRIVER)

$(CHROMEDRIVER):
	@$(call apt_install,chromium chromium-driver,chromium)
	@[ -x $@ ] || { echo "make chromium: $@ is still missing after installing chromium-driver" >&2; exit 1; }

# promtool (Debian's prometheus package) checks deploy/prometheus's alert rules and runs their
# unit tests (tests/surface/test_deploy.py); installed with apt-get when missing.
PROMTOOL := /usr/bin/promtool

promtool: $(PROMTOOL)

$(PROMTOOL):
	@$(call apt_install,prometheus,promtool)
	@[ -x $@ ] || { echo "make promtool: $@ is still missing after installing prometheus" >&2; exit 1; }

$(GO_SDKS) &:
	@$(call apt_install,$(GO_PACKAGES),clients)
	@for f in $(GO_SDKS); do [ -e $$f ] || { \
		echo "make clients: $$f is still missing after installing $(GO_PACKAGES)" >&2; exit 1; }; done

# Laravel's SQS queue driver for tests/smoke/laravel (docs/laravel.md): PHP with the extensions
# the app uses, Debian's Laravel 8 and Guzzle packages, and PHPUnit for the app's own test
# (docs/testing.md's Laravel recipe); the AWS SDK for PHP is not packaged
# and is read in place from ../shared/clients/aws-sdk-php (the test skips where it is absent,
# as the other clients there do). Checked on every run, installed with apt-get only when
# something is missing.
PHP_PACKAGES := php-cli php-curl php-mbstring php-sqlite3 php-xml php-laravel-framework \
	php-guzzlehttp-guzzle php-guzzlehttp-psr7 php-guzzlehttp-promises php-psr-http-message \
	php-psr-http-client phpunit
PHP_EXTENSIONS := curl dom mbstring pcntl pdo_sqlite
PHP_READY := command -v php >/dev/null && command -v phpunit >/dev/null && \
	php -r 'foreach ([$(foreach e,$(PHP_EXTENSIONS),"$(e)",)] as $$e) if (!extension_loaded($$e)) exit(1); \
		foreach (["Illuminate/autoload.php", "GuzzleHttp/autoload.php", "Psr/Http/Message/autoload.php"] as $$f) \
			if (stream_resolve_include_path($$f) === false) exit(1);'

laravel:
	@$(PHP_READY) || { $(call apt_install,$(PHP_PACKAGES),laravel); }
	@$(PHP_READY) || { echo "make clients: PHP, its extensions $(PHP_EXTENSIONS) or Debian's" \
		"Laravel packages or phpunit are still missing after installing $(PHP_PACKAGES)" >&2; exit 1; }

$(GO_CLIENT)/bin/scenario-%: $(GO_CLIENT)/%/main.go $(GO_SHARED) $(GO_SDKS)
	$(GO_BUILD) -o bin/scenario-$* ./$*

# compose.yaml booted for real (tests/compose): okuri's image on an S3 service, the bucket init
# and a Celery worker container, driven by pytest-docker; and docs/ci/celery-app's compose file
# (okuri, the app's worker, its tests) run until its tests exit. With a Docker engine it uses `docker
# compose`; elsewhere rootful podman, installing podman, runc, podman-compose and debootstrap
# (and the CNI dnsname plugin, by which service names resolve between containers) with apt-get
# when missing (as root or with sudo), and building the Python base image locally
# (tests/compose/images.py). Images are cached between runs and rebuilt only when inputs change.
COMPOSE_PACKAGES := podman runc podman-compose debootstrap \
	golang-github-containernetworking-plugin-dnsname
COMPOSE_TOOLS := /usr/bin/podman /usr/sbin/runc /usr/bin/podman-compose /usr/sbin/debootstrap \
	/usr/lib/cni/dnsname

compose-test: compose-tools
	$(BIN)/python -m pytest tests/compose -p no:cacheprovider

# A Docker engine, or podman and the tools compose-test uses with it (installed when missing).
compose-tools: $(STAMP)
	@docker info >/dev/null 2>&1 || $(MAKE) --no-print-directory containers

containers: $(COMPOSE_TOOLS)

$(COMPOSE_TOOLS) &:
	@$(call apt_install,$(COMPOSE_PACKAGES),containers)
	@for f in $(COMPOSE_TOOLS); do [ -e $$f ] || { \
		echo "make containers: $$f is still missing after installing $(COMPOSE_PACKAGES)" >&2; \
		exit 1; }; done
