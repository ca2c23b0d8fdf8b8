# The two commands of the README:
#   make demo   set everything up (a .venv with every extra) and solve a bundled example
#   make test   run the test suite (sets up first when needed); --dist loadgroup keeps each
#               xdist_group on one worker (the Spark tests: one JVM, not two)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
DEPS   := $(VENV)/.dependencies
STAMP  := $(VENV)/.installed
# the package's folders: a module added or removed there (the folder's time changes) links the package again
PKGDIRS := solver solver/model solver/check solver/greedy solver/load solver/planning formulations \
           formulations/consumer formulations/streams formulations/load formulations/plan adapters adapters/cli \
           adapters/bench adapters/report adapters/compare datasets datasets/simulator datasets/bundled
# the editable install's tree of links to the sources (setuptools' strict editable mode), made again if removed
LINKS   := build/__editable__.stickyflow-*
EDITABLE := $(PY) -m pip install --quiet --no-deps -e . --config-settings editable_mode=strict

.PHONY: demo test test-quick setup bytecode bench clean

setup: $(STAMP)

# An editable install in setuptools' strict mode: a tree of links to the sources under build/, put on sys.path
# by a plain .pth line. The default mode installs an import hook whose module loads pathlib, urllib.parse and
# ipaddress in every Python process of the venv (about 0.01 s of a 0.14 s command-line solve); links cost
# nothing at start-up. Edits show at once; a new module needs the links made again, which this rule does
# whenever a package folder changes (the dependencies are installed again only when pyproject.toml changes).
$(STAMP): pyproject.toml $(PKGDIRS)
	@if [ ! -f $(DEPS) ] || [ pyproject.toml -nt $(DEPS) ]; then \
		set -e; \
		echo "setting up $(VENV) with every extra"; \
		$(PYTHON) -m venv $(VENV); \
		$(PY) -m pip install --quiet --upgrade pip; \
		$(PY) -m pip install --quiet -e '.[all]' --config-settings editable_mode=strict; \
		touch $(DEPS); \
	else \
		echo "linking the package again"; \
		$(EDITABLE); \
	fi
	@touch $(STAMP)

# byte-compiles the package as it is imported (through the links): where PYTHONDONTWRITEBYTECODE is set (as in
# many container images, and on this project's machine) Python caches no bytecode on import and would compile
# every module again in every process (a command-line solve: 0.38 s instead of 0.29 s here); compileall writes
# it anyway, and again only for what changed
bytecode: $(STAMP)
	@ls -d $(LINKS) > /dev/null 2>&1 || $(EDITABLE)
	@$(PY) -m compileall -q $(LINKS) > /dev/null

demo: bytecode
	$(VENV)/bin/stickyflow solve examples/consumer-kip54-join.json

# the whole suite with the slow tests (Kafka's 1,000,000-partition tests, the Spark standalone cluster, the
# live broker, the study's repeat run): 5,645 tests in 3 min 32 s on the 2-core machine, from a clean checkout
# (2026-11-28 14:20 UTC, load average 1.5 to 2.3); the ten slowest are listed at the end (none may take over 60 s)
test: bytecode
	$(PY) -m pytest -n 2 --dist loadgroup -q --runslow --durations=10

# for quick local iterations: everything but the tests marked slow
test-quick: bytecode
	$(PY) -m pytest -n 2 --dist loadgroup -q

bench: bytecode
	$(VENV)/bin/stickyflow bench --quick

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
	find solver formulations adapters datasets tests -name __pycache__ -prune -exec rm -rf {} +
