"""Benchmarks: `python bench/run.py` (or `make bench`). See bench/README.md."""
