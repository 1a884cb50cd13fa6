"""Training-free harness evolution (``hat evolve``): Diagnose -> Confirm ->
Edit -> Evaluate -> Regression check, with early stop (``loop.py``)."""
