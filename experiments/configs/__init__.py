"""Experiment configs: Python files with `get_config(arg=None)` (big_vision)."""
