"""Serving: export for vLLM, launch recipes, traces and the complete-agent replay."""
