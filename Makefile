# gamebridge developer targets. `make help` lists them.
#
# Three virtual environments:
#   .venv       Python 3.11, `-e .[all,dev]`: core, every adapter but NeMo Gym, rollouts, tests.
#   .venv-nemo  Python 3.12, nemo-gym==0.4.0 + `-e .[openspiel]` (core and the OpenSpiel bridge): NeMo Gym needs Python >= 3.12
#               and pins older openai/mcp than Verifiers, so it cannot share .venv.
#   .venv-ors   Python 3.11, `-e .[ors,trl,rollouts,openspiel]`: openreward pins sse-starlette==2.3.6,
#               Verifiers' mcp 2.0 needs >= 3, so ORS (and TRL's OpenReward bridge) live apart.
#   .venv-openenv Python 3.11, `-e .[openenv,rollouts,openspiel]`: `openenv` 0.10 (OpenEnv's current
#               name) needs fastmcp < 4 (mcp < 2) and Verifiers 0.4.0 pins mcp==2.0.0; .venv keeps
#               `openenv-core` 0.3.0, the last OpenEnv that installs beside Verifiers.
# Setup is idempotent: a stamp file named after a hash of pyproject.toml's content marks each venv
# as done (it holds the install's duration in seconds), so changing pyproject.toml re-runs the
# install and an unchanged one skips it, whatever its mtime. pip's full output goes to
# <venv>/install.log.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

VENV := .venv
NEMO_VENV := .venv-nemo
ORS_VENV := .venv-ors
OPENENV_VENV := .venv-openenv
PY := $(VENV)/bin/python
NEMO_PY := $(NEMO_VENV)/bin/python
ORS_PY := $(ORS_VENV)/bin/python
OPENENV_PY := $(OPENENV_VENV)/bin/python
PYPROJECT_HASH := $(shell sha256sum pyproject.toml | cut -c1-12)
STAMP := $(VENV)/.installed-$(PYPROJECT_HASH)
NEMO_STAMP := $(NEMO_VENV)/.installed-$(PYPROJECT_HASH)
ORS_STAMP := $(ORS_VENV)/.installed-$(PYPROJECT_HASH)
OPENENV_STAMP := $(OPENENV_VENV)/.installed-$(PYPROJECT_HASH)
NEMO_GYM_PIN := nemo-gym==0.4.0
# ng_run builds each server's venv with uv (docs/nemo_gym.md, `make nemo-ng-run`).
UV_PIN := uv==0.13.9
DDP_ARGS ?=
PYTEST_ARGS ?=
BENCH_ARGS ?=
FILES ?= .

.PHONY: docs help setup setup-venv setup-nemo setup-ors setup-openenv setup-chromium test test-slow pytest lint format demo play bench fuzz \
	faults load train-recipe train-levers train-selfplay train-ddp nemo-ng-run eval-ray bench-scale frameworks-latest clean

help: ## List the targets.
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) \
		| awk 'BEGIN {FS = ":.*## "} {printf "  %-16s %s\n", $$1, $$2}'

setup: setup-venv setup-nemo setup-ors setup-openenv setup-chromium ## Create .venv (3.11, all extras), .venv-nemo (3.12), .venv-ors and .venv-openenv (3.11); install chromium.

setup-venv: $(STAMP) ## Create/refresh .venv only.

setup-nemo: $(NEMO_STAMP) ## Create/refresh .venv-nemo only (NeMo Gym, Python 3.12).

setup-ors: $(ORS_STAMP) ## Create/refresh .venv-ors only (ORS / openreward, with TRL; Python 3.11).

setup-openenv: $(OPENENV_STAMP) ## Create/refresh .venv-openenv only (OpenEnv's current `openenv` 0.10; Python 3.11).

# Installs hold a lock inside the venv: engineers sharing one tree may run `make test` at once.
$(STAMP):
	@mkdir -p $(VENV); exec 9>$(VENV)/.setup.lock; flock 9; \
	if [ -f $@ ]; then exit 0; fi; \
	start=$$(date +%s); \
	if [ ! -x $(PY) ]; then \
		py=$$(.ci/find-python 3.11) || { echo "setup: no Python 3.11 found" >&2; exit 1; }; \
		echo "setup: creating $(VENV) with $$py"; \
		"$$py" -m venv $(VENV); \
		$(PY) -m pip install -q -U pip setuptools wheel > $(VENV)/install.log 2>&1; \
	fi; \
	echo "setup: installing -e .[all,dev] into $(VENV) (a fresh venv takes minutes)"; \
	$(PY) -m pip install -e '.[all,dev]' > $(VENV)/install.log 2>&1 \
		|| { tail -n 40 $(VENV)/install.log >&2; echo "setup: pip failed, log: $(VENV)/install.log" >&2; exit 1; }; \
	rm -f $(VENV)/.installed-*; \
	secs=$$(( $$(date +%s) - start )); \
	echo "$$secs" > $@; \
	echo "setup: $(VENV) ready in $${secs}s"

$(NEMO_STAMP):
	@mkdir -p $(NEMO_VENV); exec 9>$(NEMO_VENV)/.setup.lock; flock 9; \
	if [ -f $@ ]; then exit 0; fi; \
	start=$$(date +%s); \
	if [ ! -x $(NEMO_PY) ]; then \
		py=$$(.ci/find-python 3.12) || py=$$(.ci/find-python 3.13) || { \
			echo "setup: WARNING no Python 3.12/3.13 found: skipping $(NEMO_VENV);" \
			     "NeMo Gym tests will be skipped" >&2; exit 0; }; \
		echo "setup: creating $(NEMO_VENV) with $$py"; \
		"$$py" -m venv $(NEMO_VENV); \
		$(NEMO_PY) -m pip install -q -U pip setuptools wheel > $(NEMO_VENV)/install.log 2>&1; \
	fi; \
	echo "setup: installing $(NEMO_GYM_PIN) and -e .[openspiel] into $(NEMO_VENV) (a fresh venv takes minutes)"; \
	$(NEMO_PY) -m pip install '$(NEMO_GYM_PIN)' '$(UV_PIN)' -e '.[openspiel]' fastapi uvicorn > $(NEMO_VENV)/install.log 2>&1 \
		|| { tail -n 40 $(NEMO_VENV)/install.log >&2; echo "setup: pip failed, log: $(NEMO_VENV)/install.log" >&2; exit 1; }; \
	rm -f $(NEMO_VENV)/.installed-*; \
	secs=$$(( $$(date +%s) - start )); \
	echo "$$secs" > $@; \
	echo "setup: $(NEMO_VENV) ready in $${secs}s"

$(ORS_STAMP):
	@mkdir -p $(ORS_VENV); exec 9>$(ORS_VENV)/.setup.lock; flock 9; \
	if [ -f $@ ]; then exit 0; fi; \
	start=$$(date +%s); \
	if [ ! -x $(ORS_PY) ]; then \
		py=$$(.ci/find-python 3.11) || { echo "setup: no Python 3.11 found" >&2; exit 1; }; \
		echo "setup: creating $(ORS_VENV) with $$py"; \
		"$$py" -m venv $(ORS_VENV); \
		$(ORS_PY) -m pip install -q -U pip setuptools wheel > $(ORS_VENV)/install.log 2>&1; \
	fi; \
	echo "setup: installing -e .[ors,trl,rollouts,openspiel] into $(ORS_VENV) (a fresh venv takes minutes)"; \
	$(ORS_PY) -m pip install -e '.[ors,trl,rollouts,openspiel]' pytest pytest-timeout > $(ORS_VENV)/install.log 2>&1 \
		|| { tail -n 40 $(ORS_VENV)/install.log >&2; echo "setup: pip failed, log: $(ORS_VENV)/install.log" >&2; exit 1; }; \
	rm -f $(ORS_VENV)/.installed-*; \
	secs=$$(( $$(date +%s) - start )); \
	echo "$$secs" > $@; \
	echo "setup: $(ORS_VENV) ready in $${secs}s"

$(OPENENV_STAMP):
	@mkdir -p $(OPENENV_VENV); exec 9>$(OPENENV_VENV)/.setup.lock; flock 9; \
	if [ -f $@ ]; then exit 0; fi; \
	start=$$(date +%s); \
	if [ ! -x $(OPENENV_PY) ]; then \
		py=$$(.ci/find-python 3.11) || { echo "setup: no Python 3.11 found" >&2; exit 1; }; \
		echo "setup: creating $(OPENENV_VENV) with $$py"; \
		"$$py" -m venv $(OPENENV_VENV); \
		$(OPENENV_PY) -m pip install -q -U pip setuptools wheel > $(OPENENV_VENV)/install.log 2>&1; \
	fi; \
	echo "setup: installing -e .[openenv,rollouts,openspiel] into $(OPENENV_VENV) (a fresh venv takes minutes)"; \
	$(OPENENV_PY) -m pip install -e '.[openenv,rollouts,openspiel]' pytest pytest-timeout hypothesis > $(OPENENV_VENV)/install.log 2>&1 \
		|| { tail -n 40 $(OPENENV_VENV)/install.log >&2; echo "setup: pip failed, log: $(OPENENV_VENV)/install.log" >&2; exit 1; }; \
	rm -f $(OPENENV_VENV)/.installed-*; \
	secs=$$(( $$(date +%s) - start )); \
	echo "$$secs" > $@; \
	echo "setup: $(OPENENV_VENV) ready in $${secs}s"

setup-chromium: ## Install Debian chromium (used by the HTML report test) if missing.
	@if [ -x /usr/bin/chromium ]; then exit 0; fi; \
	echo "setup: installing chromium (apt-get)"; \
	if { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
		>/tmp/gamebridge-chromium-install.log 2>&1; then \
		echo "setup: chromium installed"; \
	else \
		echo "setup: WARNING chromium install failed (see /tmp/gamebridge-chromium-install.log);" \
		     "chromium tests will be skipped" >&2; \
	fi

# Lint failures don't hide test results: both run, and either failing fails the target.
test: setup ## Lint, then run the test suite (excluding slow tests); fails if either fails.
	@status=0; \
	$(MAKE) --no-print-directory lint || { status=1; echo "test: LINT FAILED (tests run anyway)" >&2; }; \
	$(MAKE) --no-print-directory pytest || status=1; \
	exit $$status

# Two workers (pytest-xdist), a file per worker at a time, longest files first
# (tests/conftest.py): 11 min against 18 serially on 2 cores (a clean clone, 2026-12-02).
# TEST_JOBS=0: one process.
TEST_JOBS ?= 2
XDIST = $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder)
pytest: setup ## Run the test suite only (excluding slow tests); PYTEST_ARGS=... to add options.
	$(PY) -m pytest -m "not slow" $(XDIST) --durations=25 $(PYTEST_ARGS)

test-slow: setup ## The slow tests only (training targets, the other fault paths, big perft, ...); long.
	$(PY) -m pytest -m slow --durations=25 $(PYTEST_ARGS)

lint: setup-venv ## ruff check, ruff format --check, mypy --strict on core.
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy --strict core

# In a tree shared with others, format only your own paths: make format FILES="adapters/gem tests/gem".
format: setup-venv ## ruff format + safe fixes on FILES (default: everything).
	$(VENV)/bin/ruff format $(FILES)
	$(VENV)/bin/ruff check --fix $(FILES)

demo: setup ## Tic-Tac-Toe and Othello through every framework, scripted model: table, verdict, HTML report.
	$(VENV)/bin/gamebridge demo

play: setup-venv ## The play page: play any game, watch the scripted model, replay runs (prints its URL).
	$(VENV)/bin/gamebridge play

# The targets below run scripts that other parts of the project provide.
bench: setup ## Benchmarks vs OpenSpiel, the bare Episode and each server's floor (minutes); rewrites docs/performance.md.
	$(PY) -m bench.run $(BENCH_ARGS)

fuzz: setup-venv ## Run the fuzzers (tests/fuzz/run.py: replies; tests/fuzz/bodies.py: request bodies, every server, never a 5xx).
	@test -f tests/fuzz/run.py || { echo "fuzz: tests/fuzz/run.py does not exist yet" >&2; exit 1; }
	$(PY) tests/fuzz/run.py
	$(PY) tests/fuzz/bodies.py

FAULTS_ARGS ?=
faults: setup ## Kill every server kind and inject every endpoint fault over every framework (long); then 2,000 abandoned OpenEnv sessions.
	$(PY) tests/faults/run.py $(FAULTS_ARGS)
	$(PY) -m pytest tests/faults/test_faults.py -q -m slow -p no:cacheprovider
	GAMEBRIDGE_ABANDONED_SESSIONS=2000 $(PY) -m pytest tests/faults/test_openenv_sessions.py -q -s -p no:cacheprovider

LOAD_ARGS ?=
SERVERS_ARGS ?=
load: setup ## Load-test the environment servers, then each against its framework's floor (rewrites docs/performance.md's servers section).
	$(PY) -m rollouts.evaluation.load $(LOAD_ARGS)
	$(PY) -m bench.servers $(SERVERS_ARGS)

GAME ?= tictactoe
TEACHER ?= strong
RECIPE_ARGS ?=
train-recipe: setup-venv ## The seed's recipe on CPU: teacher, tiny model, SFT, GRPO, table into docs/trl.md (TEACHER=weak: RL beyond an imperfect teacher; QUICK=1; GAME=...).
	$(VENV)/bin/gamebridge train recipe --game $(GAME) --teacher $(TEACHER) $(if $(QUICK),--quick,) $(RECIPE_ARGS)

# 50 updates a stage, as docs/trl.md's table (the recipe's 150 take about 90 minutes on 2 cores)
LEVERS_ARGS ?= --updates 50
train-levers: setup-venv ## Which RL settings matter: the weak recipe's SFT student under one changed lever at a time (after make train-recipe TEACHER=weak); table into docs/trl.md.
	$(VENV)/bin/gamebridge train levers --docs docs/trl.md $(LEVERS_ARGS)

SELFPLAY_ARGS ?=
train-selfplay: setup-venv ## Self-play (both seats, or a snapshot) against fixed-opponent GRPO at equal compute: Tic-Tac-Toe (after make train-recipe TEACHER=weak) and Kuhn Poker's exploitability; table into docs/trl.md.
	OMP_NUM_THREADS=1 $(VENV)/bin/gamebridge train selfplay --docs docs/trl.md $(SELFPLAY_ARGS)

train-ddp: setup-venv ## GRPO on 2 CPU processes (accelerate launch, gloo), both TRL hooks; checks logs == core.
	$(PY) -m rollouts.training.ddp demo $(DDP_ARGS)

nemo-ng-run: setup ## NeMo Gym's own ng_run + ng_collect_rollouts on gamebridge; rewards checked against core.
	@test -x $(NEMO_VENV)/bin/uv || $(NEMO_PY) -m pip install -q '$(UV_PIN)'
	$(PY) -m rollouts.drivers.ng_run

eval-ray: setup-venv ## Every game through `gamebridge eval --executor ray` (local 2-CPU cluster) and threads; same JSONL.
	$(PY) -m rollouts.evaluation.ray_check

bench-scale: setup ## 1 vs 2 workers (Ray) and 1 vs 2 processes (TRL): rewrites docs/scaling.md.
	$(PY) -m bench.scale

FRAMEWORKS_ARGS ?=
frameworks-latest: ## Each framework's newest release in a scratch venv (.frameworks-latest/), its tests and conformance rows; the table in docs/frameworks.md (minutes a row).
	@py=$$(.ci/find-python 3.11) || { echo "frameworks-latest: no Python 3.11 found" >&2; exit 1; }; \
	"$$py" docs/tools/frameworks_latest.py $(FRAMEWORKS_ARGS)

docs: setup-venv ## Regenerate docs/frameworks.md's Rosetta table (after editing an adapter).
	$(PY) docs/tools/rosetta.py --write

clean: ## Remove caches and build output (keeps the venvs).
	rm -rf .pytest_cache .mypy_cache .ruff_cache .hypothesis build dist *.egg-info .frameworks-latest
	find . -name __pycache__ -type d -not -path './.venv*' -prune -exec rm -rf {} +
