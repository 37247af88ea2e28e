"""Human output of `azs`, by subject: pure functions from protocol values to lines of text.

- :mod:`.text`: colour (:class:`~.text.Style`), aligned columns (:func:`~.text.table`), short numbers.
- :mod:`.sessions`: badges, `azs ls` rows, the `azs show` header.
- :mod:`.events`: stored events and notifications, as `show`, `tail`, `run` and `watch` print them.
- :mod:`.reports`: search hits, usage tables, backups, imports.
- :mod:`.status`: what the daemon reports of its own work: status, follows, ingests.

Machine output (``--json``) does not come through here: see :mod:`azsd_client.commands.output`.
"""
