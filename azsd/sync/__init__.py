"""Sync every store to PostgreSQL: a shared, read-mostly mirror of each machine's sessions.

Each module owns one thing:

- :mod:`azsd.pgurl` (below sync, for the config to check): the `sync-url` and its safety checks;
- :mod:`.identity`: a store's repository identity (the normalized ``origin`` URL);
- :mod:`.schema`: the versioned SQL files in ``sql/`` and `azsd sync init`;
- :mod:`.connection`: a connection with bounded waits, and the file a push cursor is bound to;
- :mod:`.push`: one push of one store (rows since the cursor, in one Postgres transaction);
- :mod:`.pusher`: the daemon's background thread that pushes every known store, with backoff;
- :mod:`.remote`: reads of the shared database (list, show, search, pull);
- :mod:`.verify`: `azs sync verify`, each session compared with the database, and a repair;
- :mod:`.team_usage`: `azs usage --remote`, the team's usage summed in the database;
- :mod:`.stores`: what sync needs of the daemon's open stores (the daemon hands them in);
- :mod:`.service`: what the daemon holds when sync is configured, and the requests it answers.

Nothing here imports psycopg at module level except the modules that talk to the database, and the
daemon imports those only when `sync-url` is set: without sync, nothing changes.
"""
