"""Getting agent JSONL into stores: the parsers, one-shot ingest, import and orphans.

- :mod:`azsd.ingest.parsers`: pure parsers for the four agent formats, and format detection.
- :mod:`azsd.ingest.file`: ingest of a finished file into a session (dedup against what is stored).
- :mod:`azsd.ingest.importer`: discovery and import of agent histories (``~/.claude``, ``~/.codex``).
- :mod:`azsd.ingest.orphans`: turns a crashed AZUREAL left unstored, picked up when a store opens.

Live follow of the files an agent is writing is the daemon's (:mod:`azsd.server.follow`): nothing
here imports the daemon.
"""
