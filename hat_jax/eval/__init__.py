"""Evaluation: the case runner over any backend, records, statistics, IFEval."""
