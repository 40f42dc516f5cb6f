# privdb: two commands do all the set-up on a fresh machine with Python >= 3.11 (see README.md).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SUM    := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# two installs: the demo needs only privdb itself (its default dependencies); the tests add the dev tools,
# the PostgreSQL and Spark drivers, polars, Jupyter (IPython, nbclient) and the benchmark peers (extras in
# pyproject.toml)
BASE   := $(VENV)/.installed-base-$(SUM)
FULL   := $(VENV)/.installed-full-$(SUM)

.PHONY: demo test lint bench clean superset

# the browser test drives Debian's Chromium (root, or sudo, installs it once; without it that test is skipped
# with a message saying how to install it)
CHROMIUM := /usr/bin/chromium
SUDO     := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(BASE): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	rm -f $(VENV)/.installed-base-*
	touch $@

$(FULL): pyproject.toml $(BASE)
	$(BIN)/python -m pip install --quiet -e '.[dev,pg,postgres,spark,excel,synthetic,polars,notebook,bench]'
	# pycanon, the independent checker the anonymisation tests compare with, pins old numpy/pandas;
	# the parts the tests use need only numpy and pandas, so it goes in without its pins
	$(BIN)/python -m pip install --quiet --no-deps pycanon==1.3.6
	rm -f $(VENV)/.installed-full-*
	touch $@

# privdb's own modules compiled as installing a wheel compiles them: an editable install run with
# PYTHONDONTWRITEBYTECODE would otherwise compile them again in every process (0.3-0.5 s per command)
COMPILE := $(BIN)/python -m compileall -q -j 0 src

demo: $(BASE)
	@$(COMPILE)
	$(BIN)/privdb demo

$(CHROMIUM):
	-$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null

# the engine tests start a throw-away PostgreSQL cluster (tests/pgfixture.py); Debian's package provides initdb
.PHONY: postgresql
postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || \
	  ($(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq postgresql >/dev/null)

# Spark (the engine tests' local[2]) runs on Java 17: Debian's headless JRE if no java is found
.PHONY: java
java:
	@command -v java >/dev/null || \
	  ($(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq openjdk-17-jre-headless >/dev/null)

# the pgwire tests' JDBC client: Debian's PostgreSQL JDBC driver (compiled against with the JDK's javac)
.PHONY: jdbc
jdbc: java
	@([ -f /usr/share/java/postgresql.jar ] && command -v javac >/dev/null) || \
	  ($(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	    libpostgresql-jdbc-java openjdk-17-jdk-headless >/dev/null)

# the light load generator of bench.server.compare (bench/server/light.py): Debian's wrk
.PHONY: bench-tools
bench-tools:
	@command -v wrk >/dev/null || \
	  ($(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq wrk >/dev/null)

test: $(FULL) $(CHROMIUM) postgresql java jdbc bench-tools
	@$(COMPILE)
	$(BIN)/python -m pytest -n 2 -q --durations=30

# the Superset release check (docs/clients.md, "Superset"), run before every release: Apache Superset 6.1 in
# its own venv (pinned; its install takes minutes, so it is no part of `make test`) drives privdb's
# PostgreSQL endpoint end to end, and headless Chromium draws its chart (e2e/superset/run.py). The privdb
# server runs from $(VENV), with the checkout's src first on its path.
SUPERSET_VENV := .venv-superset
SUPERSET_REQS := e2e/superset/requirements.txt e2e/superset/constraints.txt
SUPERSET_OK   := $(SUPERSET_VENV)/.installed-$(shell cat $(SUPERSET_REQS) | cksum | cut -d' ' -f1)
CHROMEDRIVER  := /usr/bin/chromedriver

$(SUPERSET_OK): $(SUPERSET_REQS)
	$(PYTHON) -m venv $(SUPERSET_VENV)
	$(SUPERSET_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SUPERSET_VENV)/bin/python -m pip install --quiet -r e2e/superset/requirements.txt -c e2e/superset/constraints.txt
	rm -f $(SUPERSET_VENV)/.installed-*
	touch $@

# Debian's chromedriver, the same build as its Chromium (Selenium then downloads nothing)
$(CHROMEDRIVER):
	$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium chromium-driver >/dev/null

superset: $(BASE) $(SUPERSET_OK) $(CHROMEDRIVER)
	$(SUPERSET_VENV)/bin/python e2e/superset/run.py --privdb-python $(BIN)/python

lint: $(FULL)
	$(BIN)/ruff check src tests bench e2e
	$(BIN)/ruff format --check src tests bench e2e
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(FULL) bench-tools
	$(BIN)/python -m bench.mechanisms
	$(BIN)/python -m bench.sql
	$(BIN)/python -m bench.joins
	$(BIN)/python -m bench.local
	$(BIN)/python -m bench.anonymize
	$(BIN)/python -m bench.server
	$(BIN)/python -m bench.quantiles
	$(BIN)/python -m bench.engines
	$(BIN)/python -m bench.timing
	$(BIN)/python -m bench.publish_synthetic

clean:
	rm -rf $(VENV) $(SUPERSET_VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
