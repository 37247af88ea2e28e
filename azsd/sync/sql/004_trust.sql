-- azsd sync schema, version 4: a push cursor bound to one file, compactions keyed by session.
-- Applied by `azsd sync init` in one transaction; never edited once shipped.

-- 1. Which file pushes to a store row, and what the cursor's row held. A store's cursor belongs to
--    one incarnation of one store file (DESIGN.md decision 8). `file_id` is the machine and the
--    inode of the file that pushed (`machine:inode`): a copy of the worktree (`cp -a`), a backup put
--    back with `mv`, or the file moved to another machine is another file, and gets a store UUID
--    of its own instead of pushing (and tombstoning) under this one. `cursor_check` is a digest of
--    the stored bytes of the row at `pushed_event_id`: a file whose row there differs (a backup
--    copied over the file, then written to) is another incarnation too, as is one whose highest
--    `events.id` is below the cursor. Both NULL for rows pushed before version 4: the next push
--    records them.
ALTER TABLE azsd.stores ADD COLUMN file_id text;
ALTER TABLE azsd.stores ADD COLUMN cursor_check text;

-- 2. Compactions were keyed (store_uuid, local_id), and the insert rule checked only the session's
--    owner: a reader of a repository could insert rows carrying another person's store UUID into a
--    session of their own, and that person's later compactions were dropped by ON CONFLICT DO
--    NOTHING while their cursor moved on. Now a compaction is keyed by its session, and its
--    store must be the session's store (so a row names only a store of the role's own).
ALTER TABLE azsd.compactions DROP CONSTRAINT compactions_pkey;
ALTER TABLE azsd.compactions ADD PRIMARY KEY (session_uuid, local_id);
DROP POLICY compactions_insert ON azsd.compactions;
CREATE POLICY compactions_insert ON azsd.compactions FOR INSERT WITH CHECK (
    owner = current_user
    AND (session_uuid, store_uuid) IN (
        SELECT s.session_uuid, s.store_uuid FROM azsd.sessions s WHERE s.owner = current_user));
