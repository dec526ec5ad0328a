# make run: start Haboob on examples/; make test: install and run the tests;
# make webstudy: the web-server study (~30 min, docs/results/webstudy.md);
# make arashi: the Arashi web mail demo (two users, generated mail) on 127.0.0.1:8080.
# The interpreter .venv is made with: the system's CPython where it is 3.11 or newer and can make
# a venv (a distribution's build, compiled with PGO and LTO, and linked statically by Debian:
# Haboob serves 3-9 % more requests on it than on pyenv's default build, docs/benchmarks.md),
# else python3 from PATH. make PYTHON=... chooses another; an existing .venv is kept.
SYSTEM_PYTHON := $(shell /usr/bin/python3 -c 'import sys, ensurepip, venv; \
  print(sys.version_info >= (3, 11))' 2>/dev/null)
PYTHON ?= $(if $(filter True,$(SYSTEM_PYTHON)),/usr/bin/python3,python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SERVE  := $(VENV)/.installed-haboob
ARASHI := $(VENV)/.installed-arashi

.PHONY: run arashi test lint bench webstudy clean

# Everything for tests, benchmarks and lint.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP) $(SERVE) $(ARASHI)

# Only what serving needs (httptools, prometheus-client): make run on a fresh clone.
$(SERVE): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[haboob]'
	touch $(SERVE)

# exec: Ctrl-C goes to haboob alone, which stops cleanly, and make has nothing to report.
run: $(SERVE)
	cd examples && exec ../$(VENV)/bin/haboob --root site --mount /app=demo_app:app \
	  --bind 127.0.0.1:8000

# Only what Arashi needs (jinja2, prometheus-client for /_seda/metrics).
$(ARASHI): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[arashi,status]'
	touch $(ARASHI)

# The demo's data directory is made once (rm -r .arashi-demo for a fresh one); the users'
# passwords are printed, then serve prints the URL. Ctrl-C stops it.
ARASHI_DEMO ?= .arashi-demo
arashi: $(ARASHI)
	$(PY) -m arashi.demo $(ARASHI_DEMO)
	exec $(VENV)/bin/arashi serve --data $(ARASHI_DEMO) --bind 127.0.0.1:8080 \
	  --smtp-bind 127.0.0.1:2525

# The status page is checked in headless Chromium: install Debian's where apt-get can (as root),
# never failing the build over it; the test says so and skips where it could not.
$(VENV)/.chromium: | $(STAMP)
	command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
	  >/dev/null 2>&1; } || echo "chromium not installed: its test will be skipped"
	touch $@

# Arashi's tests run on PostgreSQL too, with a throwaway server from Debian's package: install
# it where apt-get can (as root), never failing the build over it; those tests skip where not.
$(VENV)/.postgresql: | $(STAMP)
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && (apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null 2>&1; } || \
	  echo "postgresql not installed: Arashi's PostgreSQL tests will be skipped"
	touch $@

# The cluster queue's tests run a throwaway Redis from Debian's package: install it where apt-get
# can (as root), never failing the build over it; those tests skip where not.
$(VENV)/.redis: | $(STAMP)
	command -v redis-server >/dev/null || test -x /usr/bin/redis-server || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && (apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >/dev/null 2>&1; } || \
	  echo "redis-server not installed: the cluster queue's tests will be skipped"
	touch $@

test: $(STAMP) $(VENV)/.chromium $(VENV)/.postgresql $(VENV)/.redis
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) benchmarks/micro.py

# The web-server study measures nginx beside Haboob: install Debian's where apt-get can (as root);
# the study skips nginx, saying so, where it could not.
$(VENV)/.nginx: | $(STAMP)
	command -v nginx >/dev/null || test -x /usr/sbin/nginx || { [ "$$(id -u)" = 0 ] && \
	  command -v apt-get >/dev/null && (apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light) >/dev/null 2>&1; } || \
	  echo "nginx not installed: the web-server study will skip it"
	touch $@

webstudy: $(STAMP) $(VENV)/.nginx
	$(PY) -m benchmarks.webstudy

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
