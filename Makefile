# rummy-referee: `make run` serves, `make test` checks. Everything runs from the project's own .venv.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Paths type-checked with mypy --strict.
MYPY_PATHS ?= engine server clients wire
PROTO_OUT ?= rummy_pb

# What is installed into the venv, one stamp per set: the runtime (`make run`: the referee and its clients, nothing
# else), the runtime plus the tournament's chart and progress bar (`make tournament`), and everything `make test`
# needs (the dev tools and the tournament extra). A larger set's install also stamps the smaller ones.
RUN_STAMP := $(VENV)/.installed-run
TOURNAMENT_STAMP := $(VENV)/.installed-tournament
DEV_STAMP := $(VENV)/.installed-dev
BENCH_STAMP := $(VENV)/.installed-bench

# The code generator as one shell command, a function of the output directory ($(1)), so that `proto` and
# `proto-check` cannot drift apart: refine it here (chain further steps with &&). The .venv's bin/ goes on
# PATH because protoc looks up its plugins (protoc-gen-mypy, protoc-gen-mypy_grpc, protoc-gen-connectrpc,
# protoc-gen-py) there; connectrpc's plugin writes the Connect service (`*_connect.py`, asyncio, over the
# google.protobuf messages) that the HTTP transport serves, and protoc-gen-py the same messages for protobuf-py
# (`*_pb.py`), whose native JSON codec the HTTP transport's JSON goes through (ten times faster than
# google.protobuf.json_format); proto/postprocess.py turns protoc's output into the importable package rummy_pb.
protoc_gen = mkdir -p $(1) && PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m grpc_tools.protoc -Iproto \
  --python_out=$(1) --grpc_python_out=$(1) --mypy_out=$(1) --mypy_grpc_out=$(1) --py_out=$(1) \
  --connectrpc_out=$(1) --connectrpc_opt=protobuf=google,io=async proto/rummy/v1/*.proto \
  && $(BIN)/python proto/postprocess.py $(1)

.PHONY: venv runtime run test test-fast proto proto-check bench node tournament web web-check FORCE

venv: $(DEV_STAMP)

# The runtime alone, as `make run` installs it.
runtime: $(RUN_STAMP)

$(BIN)/python:
	@$(PYTHON) -m venv $(VENV) || { \
	  echo "error: '$(PYTHON) -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)" >&2; exit 1; }

# A set installs again only when pyproject.toml changes, the venv is new, or a top-level package directory
# appeared or went away since its last install (the editable install maps only the packages that existed then).
PACKAGES := $(wildcard engine server clients rummy_pb wire)
define reinstall_when_packages_change
ifneq ($$(strip $$(shell cat $(1) 2>/dev/null)),$$(strip $$(PACKAGES)))
$(1): FORCE
endif
endef
$(foreach stamp,$(RUN_STAMP) $(TOURNAMENT_STAMP) $(DEV_STAMP),$(eval $(call reinstall_when_packages_change,$(stamp))))

# $(1): what to install ('.' or '.[extras]'), $(2): the stamps it satisfies.
install = $(BIN)/python -m pip install --disable-pip-version-check -e '$(1)' \
  && for s in $(2); do echo '$(PACKAGES)' >$$s; done

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(call install,.,$(RUN_STAMP))

$(TOURNAMENT_STAMP): pyproject.toml | $(BIN)/python
	$(call install,.[tournament],$(TOURNAMENT_STAMP) $(RUN_STAMP))

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(call install,.[dev],$(DEV_STAMP) $(TOURNAMENT_STAMP) $(RUN_STAMP))

FORCE:

$(BENCH_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --disable-pip-version-check -e '.[bench]'
	@touch $@

run: runtime
	$(BIN)/rummy-referee serve

# The whole suite names each test as it starts and passes (-v): a file of long tests never looks like a hang;
# the slowest tests are listed at the end.
PYTEST_PROGRESS ?= -v --durations=15

# The engine and the unit tests only (no redis-server, no referee process): under a minute. `make test` stays
# the complete suite, the one CI runs.
test-fast: venv
	$(BIN)/python -m pytest -m 'not integration' --durations=5

# mypy skips (and says so) a listed directory that holds no Python file yet; a missing path is an error.
# pytest's exit 5 (no test collected) fails like any other.
test: venv
	$(BIN)/ruff check .
	@paths=""; \
	for p in $(MYPY_PATHS); do \
	  if [ -d "$$p" ] && [ -z "$$(find "$$p" -name '*.py' -print -quit)" ]; then \
	    echo "mypy: skipping $$p: no Python files yet"; \
	  else paths="$$paths $$p"; fi; \
	done; \
	if [ -n "$$paths" ]; then echo "$(BIN)/mypy --strict$$paths"; $(BIN)/mypy --strict $$paths; fi
	@echo "$(BIN)/python -m pytest $(PYTEST_PROGRESS)"; $(BIN)/python -m pytest $(PYTEST_PROGRESS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "FAILED: pytest collected no tests (exit 5)" >&2; fi; \
	exit $$rc

proto: venv
	$(call protoc_gen,$(PROTO_OUT))

# Regenerates into a temporary directory and compares with rummy_pb/: every generated file must be there
# unchanged, and no generated file may remain whose .proto is gone.
proto-check: venv
	@if [ -z "$$(find proto -name '*.proto' -print -quit 2>/dev/null)" ]; then \
	  echo "proto-check: skipped, proto/ has no .proto files yet"; exit 0; fi; \
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(call protoc_gen,"$$tmp") || exit 1; \
	status=0; \
	for f in $$(cd "$$tmp" && find . -type f | sort); do \
	  if ! cmp -s "$$tmp/$$f" "$(PROTO_OUT)/$$f"; then \
	    echo "proto-check: $(PROTO_OUT)/$${f#./} is missing or stale"; status=1; fi; \
	done; \
	for f in $$(cd $(PROTO_OUT) 2>/dev/null && find . -type f \( -name '*_pb2*.py' -o -name '*_pb2*.pyi' -o -name '*_connect.py' -o -name '*_pb.py' \) | sort); do \
	  if [ ! -e "$$tmp/$$f" ]; then \
	    echo "proto-check: $(PROTO_OUT)/$${f#./} has no .proto source any more"; status=1; fi; \
	done; \
	if [ $$status -ne 0 ]; then \
	  echo "proto-check: FAILED, run 'make proto' and commit $(PROTO_OUT)/" >&2; exit 1; fi; \
	echo "proto-check: $(PROTO_OUT)/ is up to date"

# A tournament (rummy-tournament, with its chart and progress bar): the README's, by default (into results/; a
# second run wants --resume or another --out); TOURNAMENT_ARGS gives other entrants and flags.
TOURNAMENT_ARGS ?= random random@2 gin 'example=cmd:python3 clients/tournament/examples/program_bot.py' \
  --deals 10 --out results/
tournament: $(TOURNAMENT_STAMP)
	$(BIN)/rummy-tournament $(TOURNAMENT_ARGS)

bench: $(BENCH_STAMP)
	$(BIN)/python bench/engine.py

# The Node.js client (clients/node; needs node 18+ and npm): its locked packages, then its unit tests. `make test`
# runs these too, and whole matches of its example bots (tests/clients/test_node_client.py).
node:
	cd clients/node && npm ci --ignore-scripts --no-audit --no-fund && npm test

# The TypeScript client and the web table (clients/ts; node 20+ and npm): its locked packages, then src/gen from
# proto/ (buf generate with protoc-gen-es), dist/ (the Node bot and library) and server/web/ (the web table the
# referee serves at / on its HTTP port) by esbuild. All three outputs are committed: `make web-check` regenerates
# them in temporary directories and fails when a committed file is missing or stale (CI runs it).
TS_DIR := clients/ts
$(TS_DIR)/node_modules/.installed: $(TS_DIR)/package-lock.json
	cd $(TS_DIR) && npm ci --ignore-scripts --no-audit --no-fund
	@touch $@

web: $(TS_DIR)/node_modules/.installed
	cd $(TS_DIR) && npm run generate && npm run build

web-check: $(TS_DIR)/node_modules/.installed
	cd $(TS_DIR) && npm run check
