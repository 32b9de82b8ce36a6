package postgres

// pgOwnersSchema is version 6. threads.parent is the thread a child
// thread belongs to (store.Checkpoint.ChildOf), so Delete removes a
// thread's own children and no thread whose id merely begins like theirs;
// the children written before are found by their ids
// ("<parent>/<node>@<step>", of the parent's tenant). And each named
// tenant's threads move to its id space, "/<tenant>/<id>" (the server's
// access.ThreadKey), their children with them: the tenant is the one the
// thread's record names, else its checkpoints' (runner exec --tenant).
// A thread whose new id is taken keeps its old one.
const pgOwnersSchema = `
ALTER TABLE threads ADD COLUMN parent text;
CREATE INDEX threads_parent ON threads (parent) WHERE parent IS NOT NULL;
UPDATE threads c SET parent = p.id FROM threads p
WHERE c.id ~ '/[^/]*@[0-9]+$' AND p.id = regexp_replace(c.id, '/[^/]*$', '')
	AND (SELECT tenant FROM checkpoints WHERE thread = p.id LIMIT 1) IS NOT DISTINCT FROM
		(SELECT tenant FROM checkpoints WHERE thread = c.id LIMIT 1);

CREATE TEMP TABLE moved (old text PRIMARY KEY, new text NOT NULL) ON COMMIT DROP;
INSERT INTO moved SELECT id, '/' || tenant || '/' || id FROM (
	SELECT t.id, coalesce((SELECT tenant FROM thread_records WHERE id = t.id),
		(SELECT tenant FROM checkpoints WHERE thread = t.id LIMIT 1), '') AS tenant
	FROM threads t WHERE t.parent IS NULL
	UNION SELECT id, tenant FROM thread_records) r
WHERE tenant ~ '^[A-Za-z0-9][A-Za-z0-9._-]*$' AND left(id, 1) <> '/'
	AND '/' || tenant || '/' || id NOT IN (SELECT id FROM threads UNION SELECT id FROM thread_records);
WITH RECURSIVE kin(id, new) AS (
	SELECT old, new FROM moved
	UNION ALL
	SELECT c.id, kin.new || substr(c.id, length(kin.id) + 1) FROM threads c JOIN kin ON c.parent = kin.id)
INSERT INTO moved SELECT id, new FROM kin ON CONFLICT (old) DO NOTHING;
UPDATE threads SET id = m.new FROM moved m WHERE threads.id = m.old;
UPDATE threads SET parent = m.new FROM moved m WHERE threads.parent = m.old;
UPDATE checkpoints SET thread = m.new FROM moved m WHERE checkpoints.thread = m.old;
UPDATE leases SET thread = m.new FROM moved m WHERE leases.thread = m.old;
UPDATE thread_records SET id = m.new FROM moved m WHERE thread_records.id = m.old;
UPDATE runs SET thread = m.new FROM moved m WHERE runs.thread = m.old;
`

// pgFamily is, as the table family, thread $1 and the threads recorded as
// its children, theirs too.
const pgFamily = `WITH RECURSIVE family(id) AS (SELECT $1::text
	UNION SELECT t.id FROM threads t JOIN family f ON t.parent = f.id) `

// pgDelete... remove a thread and the child threads recorded as its own
// (their threads rows last: the family is found by them); their leases
// end but stay, so their tokens go on growing.
const (
	pgDeleteCheckpoints = pgFamily + `DELETE FROM checkpoints WHERE thread IN (SELECT id FROM family)`
	pgEndLeases         = pgFamily + `UPDATE leases SET expires_at = 0 WHERE thread IN (SELECT id FROM family)`
	pgDeleteThreads     = pgFamily + `DELETE FROM threads WHERE id IN (SELECT id FROM family)`
)
