"""Experiments: configs, the stage runner, the sweep driver and commands that
need every package (e.g. ``hat sim``, which applies HSA to simulator data)."""
