package redisprobe

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"
)

// SetLogger sends go-redis's own log lines (connection pool dial failures
// and the like; they never contain command arguments) to l instead of
// stderr. go-redis has one global logger, so this is process-wide.
func SetLogger(l logr.Logger) { redis.SetLogger(logrAdapter{l}) }

type logrAdapter struct{ l logr.Logger }

func (a logrAdapter) Printf(_ context.Context, format string, v ...any) {
	a.l.Info(strings.TrimSpace(fmt.Sprintf(format, v...)))
}
