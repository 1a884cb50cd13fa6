"""The paper's reported numbers (shared/PAPER.md), in percent or points.

Only what the report states; where it does not name the metric (strict or loose
IFEval; the T1/T2 score) the tables say so in a note.
"""

from __future__ import annotations

SOURCE = "PAPER.md (TaoLive technical report, arXiv 2608.15763)"

# Main results: row -> column -> value (%). Base IFEval is derived in the report
# (HAT is +2.0 prompt / +1.0 instruction over it).
MAIN = {
    "base (Qwen3.6-35B-A3B)": {
        "t1": 80.3,
        "t2": 75.4,
        "ifeval_prompt": 81.5,
        "ifeval_instr": 87.7,
    },
    "strongest general LLM (GLM-5.2)": {"t1": 93.0},
    "HAT 35B": {"t1": 94.8, "t2": 94.6, "ifeval_prompt": 83.5, "ifeval_instr": 88.7},
}

# Points lost by fixed-harness SFT vs base: IFEval, T3 Prompt Robustness.
FIXED_SFT_DROP = {"ifeval_prompt": -7.7, "ifeval_instr": -5.3, "t3_pr": -4.6}
# IFEval points OPD adds after each SFT (the metric is not named).
OPD_GAIN = {"fixed": 8.5, "hsa": 0.2}
# Stage ablation, IFEval prompt-level points added by each HSA stage.
HSA_SFT_GAIN = 9.4
HSA_RL_GAIN = 1.0
# Harness-edit error reduction (%).
EDIT_REDUCTION = {"HAT": 51.7, "naive SFT": 18.1}
# MTP acceptance rate of the co-trained and the base head (latency table)
MTP_ACCEPTANCE = {"co-trained": 0.780, "base head": 0.735}
# Harness evolution (accuracy, effectiveness) before it and after round 2;
# rounds 3-4 regressed
EVOLUTION = {"start": (82.40, 87.16), "round 2": (92.55, 92.75)}
