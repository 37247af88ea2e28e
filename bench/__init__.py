"""azsd benchmarks: each prints `BENCH <name> value=… unit=… baseline=… ratio=…` lines."""
