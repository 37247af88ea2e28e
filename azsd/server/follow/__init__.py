"""Live follow of the files agents are writing: the daemon's follower thread and what it owns.

- :mod:`.follower`: the follower thread (:class:`~.follower.Follower`): commits, backoff, resume.
- :mod:`.tailing`: one followed file, and how its new bytes become events (:class:`~.tailing.Tail`).
- :mod:`.store`: what the follower asks of a store: start a follow, store one read.
- :mod:`.table`: the live, closing and ended follows, as `status` shows them.
- :mod:`.inbox`: the follower's typed inbox messages; :mod:`.watcher`: file-system events as hints.
- :mod:`.quiet`: a quiet file's follow ends (its writer exited) or goes idle.
- :mod:`.opencode_tail`: an OpenCode session followed like a file.
"""
