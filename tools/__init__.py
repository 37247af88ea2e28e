"""Tools run by `make` beside the package: acyclic.py, the import graph's circle check."""
