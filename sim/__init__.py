"""The live-room simulator: the world HAT trains and evaluates in.

Modules (import what you need; `sim.room` pulls in JAX, the rest is host-side):
  types       shared records (Product, Catalog, ViewerMessage, RoomSnapshot) and
              the playbook (which tools and skills a correct turn uses)
  catalog     seeded product catalogs per split (train/dev/test never overlap)
  viewers     danmaku by intent, zh and en, coded as 6 ints for the rooms
  room        vectorized room dynamics, gymnax style (reset/step, jit + vmap)
  binding     the harness in force: tool roles and skills through a Mapping
  tools       the tool sandbox (SimBackend) with injected faults
  oracle      the oracle teacher (a Policy) and gold trajectories
  rewards     the four rule-based rewards; judge_llm for an LLM judge with voting
  datasets    cases from simulated rooms -> gold trajectories -> JSONL
  tfds_builder  the same datasets as a tensorflow_datasets builder (no TF)
"""
