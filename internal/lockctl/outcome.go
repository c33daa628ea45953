/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// exitCodes are the codes of the two outcomes a wrapped COMMAND's own
// codes could collide with: the lock held, and Redis unavailable. `run`
// and `acquire` take them from --conflict-exit-code and
// --unavailable-exit-code (as flock -E); `status` always exits
// ExitUnavailable.
type exitCodes struct{ conflict, unavailable int }

func (c *exitCodes) register(fs *pflag.FlagSet) {
	fs.IntVar(&c.conflict, "conflict-exit-code", ExitNotAcquired, "exit code when the lock is held and --wait runs out (or is 0), 1 to 255: pick one COMMAND never exits with")
	fs.IntVar(&c.unavailable, "unavailable-exit-code", ExitUnavailable, "exit code when Redis is unreachable, does not answer or refuses (auth, ACL), 1 to 255: pick one COMMAND never exits with")
}

// validate refuses codes a process cannot exit with, and 0, which would
// report a lock never taken as success.
func (c exitCodes) validate() error {
	for _, f := range []struct {
		flag string
		code int
	}{{"--conflict-exit-code", c.conflict}, {"--unavailable-exit-code", c.unavailable}} {
		if f.code < 1 || f.code > 255 {
			return exit(ExitUsage, fmt.Errorf("%s %d: want 1 to 255", f.flag, f.code))
		}
	}
	return nil
}

// probeTimeout bounds the read lockctl makes when --wait ran out during an
// attempt Redis had not answered: a healthy Redis answers in milliseconds,
// and one silent for this long is unavailable to a job anyway.
const probeTimeout = 2 * time.Second

// notAcquired turns a failed acquisition into lockctl's outcome: the lock
// held (codes.conflict), Redis unavailable (codes.unavailable), the
// DistributedLock not Ready, or err as it is. ranOut says --wait ran out;
// ctx is the command's, for the one read that tells a holder from an
// outage when the last attempt had no answer.
func (s *session) notAcquired(ctx context.Context, err error, wait time.Duration, ranOut bool) error {
	key := s.Key()
	var na *lock.NotAcquiredError
	switch {
	case errors.Is(err, kube.ErrNotReady):
		return err // ExitNotReady, with the reason
	case errors.As(err, &na) && ranOut:
		return exit(s.codes.conflict, fmt.Errorf("%s still held after --wait %v: %w", key, wait, na))
	case errors.Is(err, lock.ErrNotAcquired):
		return exit(s.codes.conflict, err)
	case redisFailed(err) && ranOut:
		return exit(s.codes.unavailable, fmt.Errorf("%s: Redis unavailable when --wait %v ran out: %w", key, wait, err))
	case redisFailed(err):
		return exit(s.codes.unavailable, fmt.Errorf("%s: Redis unavailable: %w", key, err))
	case !ranOut:
		return err
	}
	// The wait ran out during an attempt Redis had not answered (the
	// library then reports only the deadline): a holder Redis names now
	// would have kept the lock from this one anyway; anything else is an
	// outage.
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	in, perr := s.inspect(ctx)
	switch {
	case perr == nil && in.full():
		return exit(s.codes.conflict, fmt.Errorf("%s still held after --wait %v", key, wait))
	case perr == nil:
		return exit(s.codes.unavailable, fmt.Errorf("%s: Redis did not answer within --wait %v (it answers now, and the lock is free)", key, wait))
	}
	return exit(s.codes.unavailable, fmt.Errorf("%s: Redis did not answer within --wait %v, nor when asked again: %w", key, wait, perr))
}

// readFailed is `status`'s outcome when it could not read the lock:
// Redis unavailable, the DistributedLock not Ready, or another error.
func readFailed(key string, err error) error {
	err = fmt.Errorf("%s: could not read the lock: %w", key, err)
	if redisFailed(err) {
		return exit(ExitUnavailable, err)
	}
	return err
}

// redisFailed reports whether err says Redis could not be reached, did not
// answer, or refused (an error reply such as NOPERM or WRONGPASS, a TLS
// handshake, no quorum). The Kubernetes API's errors are not Redis's,
// although client-go's wrap network errors too. A context's deadline
// alone is no evidence (context.DeadlineExceeded is a net.Error too, hence
// the concrete types): it ends a wait for a holder as well.
func redisFailed(err error) bool {
	var (
		urlErr   *url.Error
		status   apierrors.APIStatus
		reply    redis.Error
		opErr    *net.OpError // dial, read and write failures, i/o timeouts
		dnsErr   *net.DNSError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
		tlsAlert tls.AlertError
	)
	switch {
	case errors.As(err, &urlErr), errors.As(err, &status):
		return false
	case errors.Is(err, lock.ErrQuorum), errors.Is(err, lock.ErrLibraryMissing), errors.Is(err, lock.ErrNotReplicated),
		errors.Is(err, os.ErrDeadlineExceeded), // a read or write timeout, as go-redis may return it bare
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	return errors.As(err, &reply) || errors.As(err, &opErr) || errors.As(err, &dnsErr) ||
		errors.As(err, &verify) || errors.As(err, &record) || errors.As(err, &tlsAlert)
}
