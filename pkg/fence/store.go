package fence

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// ErrStale reports a write refused because its token was not greater than
// the last accepted one. Match it with errors.Is.
var ErrStale = errors.New("fence: stale token")

// StaleError carries the token that was refused and the one in force (0
// when the store does not say, as with ExecFenced).
type StaleError struct {
	Resource string
	Token    uint64
	Current  uint64
}

func (e *StaleError) Error() string {
	if e.Current == 0 {
		return fmt.Sprintf("fence: write to %q with token %d refused: a token at least as large was already accepted", e.Resource, e.Token)
	}
	return fmt.Sprintf("fence: write to %q with token %d refused: token %d was already accepted", e.Resource, e.Token, e.Current)
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// RedisStore is a fenced key/value store on Redis: each resource is a hash
// {token, value} under Prefix+resource.
type RedisStore struct {
	client redis.UniversalClient
	prefix string
	// calls runs the write script: a function of the redlease library
	// where the server has it, else EVALSHA (protocol.FunctionsAuto).
	calls *protocol.Caller
}

// NewRedisStore returns a store whose keys are prefix+resource. The prefix
// defaults to "fence:" when empty.
func NewRedisStore(client redis.UniversalClient, prefix string) *RedisStore {
	if prefix == "" {
		prefix = "fence:"
	}
	return &RedisStore{client: client, prefix: prefix, calls: protocol.NewCaller(protocol.FunctionsAuto)}
}

// Write stores value for resource if token is greater than the last token
// accepted for it; otherwise it returns a *StaleError matching ErrStale.
func (s *RedisStore) Write(ctx context.Context, resource string, token uint64, value string) error {
	write := protocol.Call{Script: protocol.FenceWriteScript, Keys: []string{s.prefix + resource}, Args: []any{strconv.FormatUint(token, 10), value}}
	res, err := s.calls.On(s.client).Run(ctx, write).StringSlice()
	if err != nil {
		return fmt.Errorf("fence: write %q: %w", resource, err)
	}
	if len(res) != 2 {
		return fmt.Errorf("fence: write %q: unexpected reply %v", resource, res)
	}
	if res[0] == "1" {
		return nil
	}
	current, _ := strconv.ParseUint(res[1], 10, 64)
	return &StaleError{Resource: resource, Token: token, Current: current}
}

// Read returns the last accepted token and value of resource (0, "" when
// nothing was written).
func (s *RedisStore) Read(ctx context.Context, resource string) (uint64, string, error) {
	res, err := s.client.HMGet(ctx, s.prefix+resource, "token", "value").Result()
	if err != nil {
		return 0, "", fmt.Errorf("fence: read %q: %w", resource, err)
	}
	tok, _ := res[0].(string)
	val, _ := res[1].(string)
	if tok == "" {
		return 0, "", nil
	}
	token, err := strconv.ParseUint(tok, 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("fence: read %q: bad token %q: %w", resource, tok, err)
	}
	return token, val, nil
}
