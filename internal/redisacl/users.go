/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redisconn"
)

// defaultUser is Redis's built-in user: never provisioned, never pruned.
const defaultUser = "default"

// Passwords are the passwords a user accepts.
type Passwords struct {
	// Current is the password clients are given. Only its hash is sent.
	Current string
	// PreviousHashes (PasswordHash) are passwords still accepted during a
	// rotation's grace period, so clients that have not read the new one
	// yet can still connect.
	PreviousHashes []string
}

// Provision creates user on c's node, or replaces all of an existing
// user's settings, in one ACL SETUSER: "reset" (no passwords, keys,
// channels or commands, off), "on", the password hashes, then rules (see
// protocol.TenantACLRules; they must not carry passwords). Redis applies a
// SETUSER whole or not at all, so a node never holds a half-configured
// user, and running it again changes nothing: call it on every node, and
// again after a node restarted (users live in memory only). A password left
// out is no longer accepted by new connections.
//
// "reset" also sets sanitize-payload, which is moot here anyway: tenants
// cannot run RESTORE.
func Provision(ctx context.Context, c *redis.Client, user string, rules []string, passwords Passwords) error {
	if err := checkProvision(user, rules, passwords); err != nil {
		return fmt.Errorf("redisacl: provisioning %q: %w", user, err)
	}
	args := []any{"acl", "setuser", user, "reset", "on", "#" + PasswordHash(passwords.Current)}
	for _, h := range passwords.PreviousHashes {
		args = append(args, "#"+h)
	}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := c.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("redisacl: ACL SETUSER %s on %s: %w", user, c.Options().Addr, classify(err))
	}
	return nil
}

// checkProvision refuses what would hand out more than asked: the default
// user (every unauthenticated client is it), a user without a password,
// and password rules smuggled in with the other rules.
func checkProvision(user string, rules []string, passwords Passwords) error {
	switch {
	case user == "" || strings.ContainsAny(user, " \t\r\n\x00"):
		return errors.New("invalid username")
	case user == defaultUser:
		return errors.New("the default user is not a tenant")
	case passwords.Current == "":
		return errors.New("empty password")
	}
	for _, h := range passwords.PreviousHashes {
		if !isHash(h) {
			return fmt.Errorf("previous password hash %q is not 64 lowercase hex digits", h)
		}
	}
	for _, r := range rules {
		if r == "" || strings.IndexByte("><#!", r[0]) >= 0 || r == "nopass" || r == "resetpass" {
			return fmt.Errorf("rule %q: passwords are set from Passwords only", r)
		}
	}
	return nil
}

// Delete removes users from c's node; users that do not exist are no
// error. Redis disconnects the clients authenticated as a deleted user.
func Delete(ctx context.Context, c *redis.Client, users ...string) error {
	if len(users) == 0 {
		return nil
	}
	args := []any{"acl", "deluser"}
	for _, u := range users {
		args = append(args, u)
	}
	if err := c.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("redisacl: ACL DELUSER on %s: %w", c.Options().Addr, classify(err))
	}
	return nil
}

// List returns the users of c's node whose names start with prefix.
func List(ctx context.Context, c *redis.Client, prefix string) ([]string, error) {
	all, err := c.Do(ctx, "acl", "users").StringSlice()
	if err != nil {
		return nil, fmt.Errorf("redisacl: ACL USERS on %s: %w", c.Options().Addr, classify(err))
	}
	var users []string
	for _, u := range all {
		if strings.HasPrefix(u, prefix) {
			users = append(users, u)
		}
	}
	return users, nil
}

// Prune deletes the users of c's node whose names start with prefix and
// are not in keep, and returns their names. It never deletes the default
// user, and refuses an empty prefix: a store prunes only its own users
// (protocol.TenantUserPrefix), never those of another store or of people.
func Prune(ctx context.Context, c *redis.Client, prefix string, keep map[string]bool) (deleted []string, err error) {
	if prefix == "" {
		return nil, errors.New("redisacl: prune: empty prefix would match every user")
	}
	users, err := List(ctx, c, prefix)
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		if !keep[u] && u != defaultUser {
			deleted = append(deleted, u)
		}
	}
	if err := Delete(ctx, c, deleted...); err != nil {
		return nil, err
	}
	return deleted, nil
}

// ErrACLUnavailable reports a server that cannot apply tenant ACLs: it does
// not know the ACL command (before Redis 6, or renamed), refuses it to the
// controller's user (NOPERM), or rejects a rule it does not support (a
// server too old for channel rules or a command the rules name).
var ErrACLUnavailable = errors.New("redisacl: the server refuses ACL users")

// classify marks the replies that mean ACLs cannot be used on this server,
// as opposed to a network failure worth retrying.
func classify(err error) error {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return err
	}
	msg := strings.ToLower(reply.Error())
	for _, unavailable := range []string{"noperm", "err unknown command", "err unknown subcommand", "err error in acl setuser modifier"} {
		if strings.HasPrefix(msg, unavailable) {
			return fmt.Errorf("%w: %w", ErrACLUnavailable, withoutArgs{err})
		}
	}
	return withoutArgs{err}
}

// withoutArgs is a reply without the arguments a server echoes: ACL
// SETUSER's carry a password hash, which must stay out of error texts and
// so out of status (where a new hash on each attempt would also rewrite
// the status on every reconcile). A modifier echoed in "Error in ACL
// SETUSER modifier" is cut for the same reason.
type withoutArgs struct{ err error }

func (w withoutArgs) Error() string {
	s := redisconn.WithoutEchoedArgs(w.err.Error())
	if i := strings.Index(s, "modifier '"); i >= 0 {
		s = s[:i+len("modifier")]
	}
	return s
}

func (w withoutArgs) Unwrap() error { return w.err }
