/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
)

// redisLog takes go-redis's own log lines (dial failures and the like,
// never command arguments) instead of go-redis's default logger, which
// writes them raw to stderr with its source file and line, several a
// second while Redis is down. Without -v lockctl writes one line per
// problem, naming the lock, and writes again only when the problem
// changes; with -v every line go-redis logs. go-redis has one logger per
// process, and a lockctl command one lock.
type redisLog struct {
	w       io.Writer
	mu      sync.Mutex
	verbose bool
	lock    string // the lock's key, named once the command has opened it
	last    string // the problem written last
}

// naming makes the lines name key; a command opens its lock before any
// Redis connection is made.
func (l *redisLog) naming(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lock = key
}

// Printf is go-redis's logging interface (redis.SetLogger).
func (l *redisLog) Printf(_ context.Context, format string, v ...any) {
	line := strings.TrimPrefix(strings.TrimSpace(fmt.Sprintf(format, v...)), "redis: ")
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.verbose {
		printf(l.w, "lockctl: %s: go-redis: %s\n", l.lock, line)
		return
	}
	if p := problemOf(line, v); p != l.last {
		l.last = p
		printf(l.w, "lockctl: %s: Redis: %s\n", l.lock, p)
	}
}

// problemOf is what a go-redis line reports: the error it carries (the
// same refused dial whatever count of attempts the line gives), else the
// line.
func problemOf(line string, args []any) string {
	for i := len(args) - 1; i >= 0; i-- {
		if err, ok := args[i].(error); ok {
			return err.Error()
		}
	}
	return line
}
