# The two commands of the README:
#   make demo   set everything up (a .venv with every extra) and solve a bundled example
#   make test   run the test suite (sets up first when needed); --dist loadgroup keeps each
#               xdist_group on one worker (the Spark tests: one JVM, not two)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-quick setup bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/stickyflow solve examples/consumer-kip54-join.json

# the whole suite with the slow tests (Kafka's 1,000,000-partition tests, the Spark standalone cluster, the
# live broker, the study's repeat run): 4,460 tests in about 11 minutes on the 2-core machine (2026-11-27)
test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -q --runslow

# for quick local iterations: everything but the tests marked slow
test-quick: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -q

bench: $(STAMP)
	$(VENV)/bin/stickyflow bench --quick

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
