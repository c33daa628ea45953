package lock

import (
	"fmt"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// MaxKeyLength bounds a lock key, in bytes.
const MaxKeyLength = protocol.MaxKeyLength

// DefaultRenewInterval is the watchdog period when none is given: a third of
// the TTL, so two renewals can fail before the lease runs out.
func DefaultRenewInterval(ttl time.Duration) time.Duration { return ttl / 3 }

// DefaultIdentity names this process: the pod name (POD_NAME, else the
// hostname) and the process id, e.g. "settle-7f9c-x2:1".
func DefaultIdentity() string { return protocol.DefaultIdentity() }

// ValidateKey reports why a key cannot be used (matching ErrInvalidConfig),
// or nil: empty, longer than MaxKeyLength, with whitespace, or with a '}'
// outside a {hash tag} (its derived keys would leave its Cluster slot).
func ValidateKey(key string) error { return invalid(protocol.ValidateKey(key)) }

func invalid(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
}
