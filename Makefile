# The two commands of the README:
#   make demo   set everything up (a .venv with every extra) and solve a bundled example
#   make test   run the test suite (sets up first when needed); --dist loadgroup keeps each
#               xdist_group on one worker (the Spark tests: one JVM, not two)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-all setup bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/stickyflow solve examples/consumer-kip54-join.json

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -q

test-all: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -q --runslow

bench: $(STAMP)
	$(VENV)/bin/stickyflow bench --quick

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
