"""The daemon: its lifecycle, the worker that owns each store, and what each request does.

- :mod:`azsd.server.daemon`: start, run, stop; routes each request.
- :mod:`azsd.server.workers`: one thread per open store, the only caller of its connection.
- :mod:`azsd.server.handlers`: what each store request does, as a function of the store.
"""
