# make run: start Haboob on examples/; make test: install and run the tests.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	cd examples && ../$(VENV)/bin/haboob --root site --mount /app=demo_app:app --bind 127.0.0.1:8000

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks examples

bench: $(STAMP)
	$(PY) benchmarks/micro.py

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
