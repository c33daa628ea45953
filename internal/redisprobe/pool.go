package redisprobe

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/redlease/redlease/internal/redisconn"
)

// Credentials are redisconn's: the controller, pkg/kube and lockctl
// describe who connects the same way.
type Credentials = redisconn.Credentials

// TLS is redisconn's: it builds the TLS config of every client.
type TLS = redisconn.TLS

// ErrBadCA is returned for a CA bundle that holds no PEM certificate.
var ErrBadCA = redisconn.ErrBadCA

// Target is one server (or Sentinel) and how to talk to it.
type Target struct {
	// Addr is host:port.
	Addr string
	// DB is the logical database (0 for Sentinels and Cluster nodes).
	DB int
	// Credentials to connect with.
	Credentials Credentials
}

type poolKey struct {
	addr  string
	db    int
	creds string // Credentials.fingerprint
}

// PoolOptions tune the clients of a Pool. Zero values take the defaults.
type PoolOptions struct {
	// PoolSize is the most connections one client opens to its server.
	// Default 4. The connections a server sees from the controller stay at
	// or below PoolSize per distinct credentials, however many
	// DistributedLocks use it.
	PoolSize int
	// DialTimeout bounds connecting (TCP, TLS, AUTH). Default 2s.
	DialTimeout time.Duration
	// Timeout bounds reading and writing one command. Default 2s.
	Timeout time.Duration
	// IdleTimeout closes connections idle this long. Default 5m.
	IdleTimeout time.Duration
	// Dialer replaces the TCP dialer (tests map addresses with it). With
	// Egress set, it receives the checked IP:port, not the name.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// Egress limits the networks clients connect to; nil allows any. It is
	// checked on every dial, so addresses learned from Sentinel, CLUSTER
	// SHARDS or a MOVED reply are checked like those a resource names: the
	// controller reaches them all through this Pool.
	Egress *Egress
}

func (o PoolOptions) withDefaults() PoolOptions {
	if o.PoolSize <= 0 {
		o.PoolSize = 4
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 2 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 5 * time.Minute
	}
	return o
}

// Pool shares go-redis clients, one per (address, database, credentials),
// between owners (DistributedLocks). Each owner holds a reference to the
// clients it used in its latest session; a client is closed when no owner
// references it. A Pool is safe for concurrent use.
type Pool struct {
	opts PoolOptions

	mu      sync.Mutex
	clients map[poolKey]*pooled
	owners  map[string]map[poolKey]struct{}
	closed  bool
}

type pooled struct {
	client *redis.Client
	refs   int
}

// NewPool returns an empty pool.
func NewPool(opts PoolOptions) *Pool {
	return &Pool{
		opts:    opts.withDefaults(),
		clients: map[poolKey]*pooled{},
		owners:  map[string]map[poolKey]struct{}{},
	}
}

// ErrPoolClosed is returned by Session.Client after Pool.Close.
var ErrPoolClosed = errors.New("redisprobe: pool closed")

// Session starts a round of work for owner: the clients it asks for are
// referenced by owner, and End drops the references owner held from earlier
// sessions but did not use in this one. One owner has at most one session at
// a time; a Session is safe for concurrent use by that round's goroutines.
func (p *Pool) Session(owner string) *Session {
	return &Session{pool: p, owner: owner, used: map[poolKey]struct{}{}}
}

// Session is one owner's round of work; see Pool.Session.
type Session struct {
	pool  *Pool
	owner string

	mu   sync.Mutex
	used map[poolKey]struct{}
}

// Client returns the shared client for t, referenced by the session's
// owner. The client must not be closed by the caller.
func (s *Session) Client(t Target) (*redis.Client, error) {
	k := poolKey{addr: t.Addr, db: t.DB, creds: t.Credentials.Fingerprint()}
	s.mu.Lock()
	s.used[k] = struct{}{}
	s.mu.Unlock()
	return s.pool.acquire(s.owner, k, t)
}

// End drops the owner's references to clients it did not use in this
// session, closing clients nobody uses any more.
func (s *Session) End() {
	s.mu.Lock()
	used := s.used
	s.mu.Unlock()
	s.pool.retain(s.owner, used)
}

// Release drops every reference of owner (a deleted DistributedLock).
func (p *Pool) Release(owner string) { p.retain(owner, nil) }

// Len is the number of open clients.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.clients)
}

// Close closes every client. Later sessions get ErrPoolClosed.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var errs []error
	for k, c := range p.clients {
		errs = append(errs, c.client.Close())
		delete(p.clients, k)
	}
	clear(p.owners)
	return errors.Join(errs...)
}

func (p *Pool) acquire(owner string, k poolKey, t Target) (*redis.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrPoolClosed
	}
	c, ok := p.clients[k]
	if !ok {
		client, err := p.newClient(t)
		if err != nil {
			return nil, err
		}
		c = &pooled{client: client}
		p.clients[k] = c
	}
	refs := p.owners[owner]
	if refs == nil {
		refs = map[poolKey]struct{}{}
		p.owners[owner] = refs
	}
	if _, held := refs[k]; !held {
		refs[k] = struct{}{}
		c.refs++
	}
	return c.client, nil
}

// retain keeps owner's references to keep only, closing unused clients.
func (p *Pool) retain(owner string, keep map[poolKey]struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	refs := p.owners[owner]
	for k := range refs {
		if _, ok := keep[k]; ok {
			continue
		}
		delete(refs, k)
		if c := p.clients[k]; c != nil {
			c.refs--
			if c.refs <= 0 {
				_ = c.client.Close()
				delete(p.clients, k)
			}
		}
	}
	if len(refs) == 0 {
		delete(p.owners, owner)
	}
}

func (p *Pool) newClient(t Target) (*redis.Client, error) {
	o := &redis.Options{
		Addr:     t.Addr,
		Username: t.Credentials.Username,
		Password: t.Credentials.Password,
		DB:       t.DB,
		// RESP2 and no CLIENT SETINFO: the fewest commands an ACL user
		// must be allowed, and nothing a Sentinel refuses.
		Protocol:        2,
		DisableIdentity: true,
		ClientName:      "",
		PoolSize:        p.opts.PoolSize,
		MaxActiveConns:  p.opts.PoolSize,
		MaxIdleConns:    p.opts.PoolSize,
		ConnMaxIdleTime: p.opts.IdleTimeout,
		PoolTimeout:     p.opts.Timeout,
		DialTimeout:     p.opts.DialTimeout,
		ReadTimeout:     p.opts.Timeout,
		WriteTimeout:    p.opts.Timeout,
		// The controller's requeue is the retry; a probe must fail fast.
		MaxRetries:    -1,
		DialerRetries: 1,
		Dialer:        p.opts.Dialer,
		// Maintenance notifications (RESP3 only, so off already) would
		// dial the endpoints a server names through go-redis's default
		// dialer, around Egress: keep them off if Protocol ever changes.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	if t.Credentials.TLS != nil {
		cfg, err := t.Credentials.TLS.Config(t.Addr)
		if err != nil {
			return nil, err
		}
		o.TLSConfig = cfg
	}
	base := o.Dialer
	if base == nil {
		// go-redis adds TLS only in its own dialer: wrap that one, not a
		// bare TCP dialer, so the reply limit reads inside TLS.
		base = redis.NewDialer(o)
	}
	o.Dialer = limitReplies(p.opts.Egress.Wrap(base), MaxReplyBytes)
	return redis.NewClient(o), nil
}
