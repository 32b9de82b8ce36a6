package sqlite

// sqliteOwnersSchema is version 13. thread_keys.parent is the key of the
// thread a child thread belongs to (store.Checkpoint.ChildOf), so Delete
// removes a thread's own children and no thread whose id merely begins
// like theirs; the children written before are found by their ids
// ("<parent>/<node>@<step>", of the parent's tenant). And each named
// tenant's threads move to its id space, "/<tenant>/<id>" (the server's
// access.ThreadKey), their children with them: the tenant is the one the
// thread's record names, else its checkpoints' (runner exec --tenant).
// A thread whose new id is taken keeps its old one.
const sqliteOwnersSchema = `
ALTER TABLE thread_keys ADD COLUMN parent INTEGER;
CREATE INDEX thread_keys_parent ON thread_keys (parent) WHERE parent IS NOT NULL;
UPDATE thread_keys SET parent = (SELECT p.key FROM thread_keys p
	WHERE p.id = substr(thread_keys.id, 1, length(rtrim(thread_keys.id, replace(thread_keys.id, '/', ''))) - 1)
	AND (SELECT tenant FROM checkpoints WHERE tkey = p.key LIMIT 1) IS
		(SELECT tenant FROM checkpoints WHERE tkey = thread_keys.key LIMIT 1))
WHERE instr(id, '/') > 0 AND substr(id, length(rtrim(id, replace(id, '/', ''))) + 1) GLOB '?*@[0-9]*';

CREATE TEMP TABLE moved_roots (old TEXT PRIMARY KEY, new TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO moved_roots SELECT id, '/' || tenant || '/' || id FROM (
	SELECT k.id, coalesce((SELECT tenant FROM thread_records WHERE id = k.id),
		(SELECT tenant FROM checkpoints WHERE tkey = k.key LIMIT 1), '') AS tenant
	FROM thread_keys k WHERE k.parent IS NULL
	UNION SELECT id, tenant FROM thread_records)
WHERE tenant GLOB '[A-Za-z0-9]*' AND tenant NOT GLOB '*[^A-Za-z0-9._-]*' AND substr(id, 1, 1) != '/'
	AND '/' || tenant || '/' || id NOT IN (SELECT id FROM thread_keys UNION SELECT id FROM thread_records);
CREATE TEMP TABLE moved (old TEXT PRIMARY KEY, new TEXT NOT NULL) WITHOUT ROWID;
WITH RECURSIVE kin(key, id, new) AS (
	SELECT k.key, m.old, m.new FROM moved_roots m LEFT JOIN thread_keys k ON k.id = m.old
	UNION ALL
	SELECT c.key, c.id, kin.new || substr(c.id, length(kin.id) + 1) FROM thread_keys c JOIN kin ON c.parent = kin.key)
INSERT INTO moved SELECT id, new FROM kin;
UPDATE thread_keys SET id = m.new FROM moved m WHERE thread_keys.id = m.old;
UPDATE threads SET id = m.new FROM moved m WHERE threads.id = m.old;
UPDATE checkpoints SET thread = m.new FROM moved m WHERE checkpoints.thread = m.old;
UPDATE thread_records SET id = m.new FROM moved m WHERE thread_records.id = m.old;
UPDATE runs SET thread = m.new FROM moved m WHERE runs.thread = m.old;
DROP TABLE moved_roots;
DROP TABLE moved;
`

// sqliteAddChild gives thread ?1 its key, if it has none (sqliteAddKey),
// recording it as a child thread of thread ?2.
const sqliteAddChild = `INSERT OR ROLLBACK INTO thread_keys (id, parent) VALUES (?1, (SELECT key FROM thread_keys WHERE id = ?2))
ON CONFLICT (id) DO UPDATE SET parent = excluded.parent`

// sqliteFamily is, as the table family, the keys of thread ?1 and of the
// threads recorded as its children, theirs too.
const sqliteFamily = `WITH RECURSIVE family(key) AS (SELECT key FROM thread_keys WHERE id = ?1
	UNION SELECT k.key FROM thread_keys k JOIN family f ON k.parent = f.key) `

// sqliteDelete removes thread ?1 and the child threads recorded as its
// own, with their approvals (their keys last: the family is found by
// them); a leased thread keeps its key, so its token goes on counting.
const sqliteDelete = sqliteDeleteApprovals + sqliteFamily + `DELETE FROM checkpoints WHERE tkey IN (SELECT key FROM family);
` + sqliteFamily + `UPDATE leases SET expires_at = 0 WHERE tkey IN (SELECT key FROM family);
` + sqliteFamily + `DELETE FROM threads WHERE tkey IN (SELECT key FROM family);
` + sqliteFamily + `DELETE FROM thread_keys WHERE key IN (SELECT key FROM family) AND key NOT IN (SELECT tkey FROM leases);`
