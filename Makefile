# The README's two commands are `make serve` and `make test`; CI runs `make test` through .ci/run.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test check lint install dst bench-cost bench-sqs

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

serve: $(STAMP)
	$(BIN)/okuri serve

lint: $(STAMP)
	$(BIN)/ruff check okuri tests
	$(BIN)/lint-imports
	$(BIN)/mypy okuri

test: lint
	$(BIN)/python -m pytest --cov=okuri --cov-report=term --cov-fail-under=90 -p no:cacheprovider

check: test

dst: $(STAMP)
	$(BIN)/okuri dst --seeds 2000

bench-sqs: $(STAMP)
	$(BIN)/okuri bench sqs

bench-cost: $(STAMP)
	$(BIN)/okuri bench cost
