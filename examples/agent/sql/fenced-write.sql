-- A fenced write in PostgreSQL, for writers in any language: the store
-- itself refuses a write whose fence is not above the last one it took, in
-- the same statement as the write, so a holder paused past its lease cannot
-- overwrite its successor's work. pkg/fence's ExecFenced runs the same
-- statement from Go (docs/library.md).
--
-- Run it as a demo: psql -v ON_ERROR_STOP=1 -f fenced-write.sql
-- In an application, send the two statements below with your driver's
-- parameters ($1 $2 $3 in node-postgres and pgx, %s in psycopg), the fence
-- being the lease's (a string of digits in the agent's JSON), and read the
-- rows affected: 0 means the fence was stale and nothing was written.
--
-- Each "-- expect:" line is checked by test/agentclients
-- (TestTheDocumentedFencedSQLRefusesAStaleFence) against a real PostgreSQL.

-- Each row keeps the fence of the last write it took. numeric(20) holds
-- any uint64; bigint would stop at 2^63-1.
CREATE TEMPORARY TABLE accounts (
  id      text PRIMARY KEY,
  balance bigint NOT NULL,
  fence   numeric(20) NOT NULL DEFAULT 0
);

-- The fenced UPDATE: $1 the row, $2 the new balance, $3 the lease's fence.
PREPARE fenced_update(text, bigint, numeric) AS
  UPDATE accounts SET balance = $2, fence = $3
  WHERE id = $1 AND fence < $3;

-- The same for a row that may not exist yet: insert it, or update it only
-- with a higher fence.
PREPARE fenced_upsert(text, bigint, numeric) AS
  INSERT INTO accounts AS a (id, balance, fence) VALUES ($1, $2, $3)
  ON CONFLICT (id) DO UPDATE SET balance = excluded.balance, fence = excluded.fence
  WHERE a.fence < excluded.fence;

-- expect: INSERT 0 1 (a new row)
EXECUTE fenced_upsert('acct-1', 100, 1796483908589822);

-- The next holder, fence ...823, writes.
-- expect: UPDATE 1
EXECUTE fenced_update('acct-1', 110, 1796483908589823);

-- The first holder, paused past its lease, comes back with its fence ...822
-- and the balance it read before the pause: refused.
-- expect: UPDATE 0 (stale fence: nothing written)
EXECUTE fenced_update('acct-1', 90, 1796483908589822);

-- A retry under the same fence is refused too: only a higher one is taken.
-- expect: UPDATE 0 (equal fence: nothing written)
EXECUTE fenced_update('acct-1', 120, 1796483908589823);

-- expect: INSERT 0 0 (stale fence: nothing written)
EXECUTE fenced_upsert('acct-1', 80, 1796483908589822);

-- The successor's write is the one that stands.
-- expect: acct-1 110 1796483908589823
SELECT id, balance, fence FROM accounts;
