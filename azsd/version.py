"""azsd's version, the one place it is written (pyproject.toml reads it; `azsd.__version__` and the
client's `azsd_client.__version__` are this): a module of its own, which imports nothing."""

__version__ = "0.1.0"
