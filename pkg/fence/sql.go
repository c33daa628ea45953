package fence

import (
	"context"
	"database/sql"
	"fmt"
)

// Execer is what ExecFenced needs of a *sql.DB, *sql.Conn or *sql.Tx.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// ExecFenced runs a conditional UPDATE that refuses stale tokens in its own
// WHERE clause, and reports a refusal as ErrStale. The query must compare
// and store the token in one statement, for example
//
//	UPDATE accounts SET balance = $2, fence = $3 WHERE id = $1 AND fence < $3
//
// so that the check and the write are one atomic step in the database.
// Zero rows affected means the row's fence was already at or above the
// token (or the row does not exist).
func ExecFenced(ctx context.Context, db Execer, resource string, token uint64, query string, args ...any) error {
	res, err := db.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("fence: write %q: %w", resource, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("fence: write %q: %w", resource, err)
	}
	if n == 0 {
		return &StaleError{Resource: resource, Token: token}
	}
	return nil
}
