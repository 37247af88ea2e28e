"""The daemon: its lifecycle, the worker that owns each store, and what each request does.

- :mod:`azsd.server.daemon`: start, run, stop; routes each request.
- :mod:`azsd.server.registry`: the open stores, and the one way to them (`StoreRegistry.call`).
- :mod:`azsd.server.workers`: a store's writer and reader threads, the only callers of its connections.
- :mod:`azsd.server.handlers`: what each store request does, as a function of the store.
- :mod:`azsd.server.follow`: live follow of the files agents are writing (the follower thread).
"""
