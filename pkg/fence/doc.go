// Package fence holds stores that refuse stale fencing tokens: a write for a
// resource is accepted only with a token greater than the last token accepted
// for that resource. A lock holder that was paused past its lease (and was
// replaced by a holder with a larger token) is refused instead of
// overwriting its successor's work.
//
// RedisStore keeps the last token and value of each resource in a Redis hash
// and compares atomically in a script. In a SQL database the same rule is
// one conditional UPDATE:
//
//	UPDATE accounts SET balance = $2, fence = $3 WHERE id = $1 AND fence < $3
//
// where zero rows affected means the token was stale; ExecFenced runs such a
// statement and reports that as ErrStale.
package fence
