package redisprobe

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// IsAuthError reports whether err is a server refusing the credentials:
// a wrong password or user (WRONGPASS), a password required but not sent
// (NOAUTH), a password sent to a server without one, or an ACL user denied
// the commands a probe needs (NOPERM).
func IsAuthError(err error) bool {
	msg := redisErrorText(err)
	for _, p := range []string{"WRONGPASS", "NOAUTH", "NOPERM", "ERR AUTH", "ERR invalid password", "ERR Client sent AUTH"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// IsConfigUnavailable reports whether err says CONFIG cannot be used:
// renamed or disabled (unknown command) or denied by ACL (NOPERM).
func IsConfigUnavailable(err error) bool {
	if errors.Is(err, ErrConfigUnavailable) {
		return true
	}
	msg := redisErrorText(err)
	return strings.HasPrefix(msg, "ERR unknown command") ||
		strings.HasPrefix(msg, "ERR unknown subcommand") ||
		strings.HasPrefix(msg, "NOPERM")
}

// IsUnknownCommand reports whether the server does not know the command
// (e.g. CLUSTER SHARDS before Redis 7).
func IsUnknownCommand(err error) bool {
	msg := redisErrorText(err)
	return strings.HasPrefix(msg, "ERR unknown command") || strings.HasPrefix(msg, "ERR unknown subcommand")
}

// redisErrorText is the server's error reply of err, or "".
func redisErrorText(err error) string {
	var re redis.Error
	if errors.As(err, &re) {
		return re.Error()
	}
	return ""
}
