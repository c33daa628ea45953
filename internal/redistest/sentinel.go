package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// sentinelMasterName is the name the Sentinels monitor the master under.
	sentinelMasterName = "mymaster"
	sentinelCount      = 3
	// sentinelSettleTimeout covers Sentinels finding each other: they
	// announce themselves on the master every 2 s.
	sentinelSettleTimeout = 20 * time.Second
	// failoverWait covers promotion plus every Sentinel hearing about it.
	failoverWait = 30 * time.Second
)

// Sentinel is a master with replicas monitored by three Sentinels (quorum 2,
// down-after-milliseconds 1000, failover-timeout 3000, so failovers in tests
// take seconds). Master and Replicas are the roles at start; after a
// failover ask CurrentMaster and ServerByAddr.
type Sentinel struct {
	Master     *Server
	Replicas   []*Server
	Sentinels  []*Server
	MasterName string
}

// StartSentinel starts a master, the given number of replicas and three
// redis-sentinel processes monitoring them, and waits until every Sentinel
// sees the master up, all replicas and the two other Sentinels.
func StartSentinel(t testing.TB, replicas int, opts ...Option) *Sentinel {
	t.Helper()
	RequireBinaries(t)
	cfg := newConfig(opts)
	master, reps := startGroup(t, cfg, replicas)
	g := &Sentinel{Master: master, Replicas: reps, MasterName: sentinelMasterName}
	for range sentinelCount {
		g.Sentinels = append(g.Sentinels, launch(t, "redis-sentinel", "", false, func(s *Server) ([]string, error) {
			return sentinelConf(s, cfg, g.MasterName, master), nil
		}))
	}
	if err := poll(context.Background(), sentinelSettleTimeout, g.settled); err != nil {
		t.Fatalf("redistest: Sentinels did not settle: %v", err)
	}
	return g
}

// settled returns nil once every Sentinel sees the master as up, with all
// replicas up and all other Sentinels.
func (g *Sentinel) settled(ctx context.Context) error {
	for _, sn := range g.Sentinels {
		err := func() error {
			c := sentinelClient(sn)
			defer func() { _ = c.Close() }()
			m, err := c.Master(ctx, g.MasterName).Result()
			if err != nil {
				return err
			}
			if m["flags"] != "master" || m["port"] != strconv.Itoa(g.Master.port) {
				return fmt.Errorf("master %s:%s flags %q", m["ip"], m["port"], m["flags"])
			}
			if m["num-slaves"] != strconv.Itoa(len(g.Replicas)) || m["num-other-sentinels"] != strconv.Itoa(sentinelCount-1) {
				return fmt.Errorf("sees %s replicas and %s other Sentinels", m["num-slaves"], m["num-other-sentinels"])
			}
			reps, err := c.Replicas(ctx, g.MasterName).Result()
			if err != nil {
				return err
			}
			for _, r := range reps {
				if r["flags"] != "slave" {
					return fmt.Errorf("replica %s flags %q", r["name"], r["flags"])
				}
			}
			return nil
		}()
		if err != nil {
			return fmt.Errorf("%s: %w", sn, err)
		}
	}
	return nil
}

// SentinelAddrs are the Sentinels' addresses, e.g. for
// redis.FailoverOptions.SentinelAddrs.
func (g *Sentinel) SentinelAddrs() []string {
	addrs := make([]string, len(g.Sentinels))
	for i, sn := range g.Sentinels {
		addrs[i] = sn.Addr()
	}
	return addrs
}

// CurrentMaster asks the first Sentinel that answers for the master's
// address (SENTINEL GET-MASTER-ADDR-BY-NAME).
func (g *Sentinel) CurrentMaster(ctx context.Context) (string, error) {
	var errs []error
	for _, sn := range g.Sentinels {
		if !sn.Alive() {
			continue
		}
		addr, err := masterAddrFrom(ctx, sn, g.MasterName)
		if err == nil {
			return addr, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", sn, err))
	}
	if len(errs) == 0 {
		return "", errors.New("redistest: no Sentinel is running")
	}
	return "", errors.Join(errs...)
}

func masterAddrFrom(ctx context.Context, sn *Server, name string) (string, error) {
	c := sentinelClient(sn)
	defer func() { _ = c.Close() }()
	hp, err := c.GetMasterAddrByName(ctx, name).Result()
	if err != nil {
		return "", err
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("GET-MASTER-ADDR-BY-NAME answered %q", hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// Failover forces a failover (SENTINEL FAILOVER, no agreement needed) and
// waits until every running Sentinel names the same new master and that
// server reports role:master. The old master, if running, is turned into a
// replica by the Sentinels only about 10 s later (Sentinel waits 8 s after
// seeing it claim the master role and reads its INFO every 10 s), so a test
// that needs that must wait for it.
func (g *Sentinel) Failover(ctx context.Context) (newMaster string, err error) {
	old, err := g.CurrentMaster(ctx)
	if err != nil {
		return "", err
	}
	if err := g.requestFailover(ctx); err != nil {
		return "", err
	}
	err = poll(ctx, failoverWait, func(ctx context.Context) error {
		addr, err := g.agreedMaster(ctx)
		if err != nil {
			return err
		}
		if addr == old {
			return fmt.Errorf("sentinels still name %s", old)
		}
		srv := g.ServerByAddr(addr)
		if srv == nil {
			return fmt.Errorf("sentinels name %s, which is not in the group", addr)
		}
		info, err := srv.Info(ctx, "replication")
		if err != nil {
			return fmt.Errorf("%s: %w", srv, err)
		}
		if info["role"] != "master" {
			return fmt.Errorf("%s has role %q", srv, info["role"])
		}
		newMaster = addr
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("redistest: failover away from %s: %w", old, err)
	}
	return newMaster, nil
}

// requestFailover sends SENTINEL FAILOVER to the first running Sentinel.
// NOGOODSLAVE (no replica with fresh enough state yet) passes by itself, so
// it is retried; INPROG means a failover is already under way, which is as
// good; anything else is final.
func (g *Sentinel) requestFailover(ctx context.Context) error {
	sn := g.firstAlive()
	if sn == nil {
		return errors.New("redistest: no Sentinel is running")
	}
	c := sentinelClient(sn)
	defer func() { _ = c.Close() }()
	return poll(ctx, failoverWait, func(ctx context.Context) error {
		err := c.Failover(ctx, g.MasterName).Err()
		switch {
		case err == nil, strings.HasPrefix(err.Error(), "INPROG"):
			return nil
		case strings.HasPrefix(err.Error(), "NOGOODSLAVE"):
			return err
		default:
			return permanent(fmt.Errorf("%s: %w", sn, err))
		}
	})
}

func (g *Sentinel) firstAlive() *Server {
	for _, sn := range g.Sentinels {
		if sn.Alive() {
			return sn
		}
	}
	return nil
}

// agreedMaster returns the master address all running Sentinels report, or
// an error while they disagree.
func (g *Sentinel) agreedMaster(ctx context.Context) (string, error) {
	agreed := ""
	for _, sn := range g.Sentinels {
		if !sn.Alive() {
			continue
		}
		addr, err := masterAddrFrom(ctx, sn, g.MasterName)
		if err != nil {
			return "", fmt.Errorf("%s: %w", sn, err)
		}
		if agreed != "" && addr != agreed {
			return "", fmt.Errorf("sentinels disagree: %s and %s", agreed, addr)
		}
		agreed = addr
	}
	if agreed == "" {
		return "", errors.New("no Sentinel is running")
	}
	return agreed, nil
}

// ServerByAddr returns the group's server (data server or Sentinel) at
// addr, or nil.
func (g *Sentinel) ServerByAddr(addr string) *Server {
	for _, list := range [][]*Server{{g.Master}, g.Replicas, g.Sentinels} {
		for _, s := range list {
			if s.Addr() == addr {
				return s
			}
		}
	}
	return nil
}

// sentinelClient is a fail-fast client for the harness's Sentinel commands.
func sentinelClient(sn *Server) *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{
		Addr:          sn.Addr(),
		DialTimeout:   time.Second,
		ReadTimeout:   2 * time.Second,
		WriteTimeout:  2 * time.Second,
		MaxRetries:    -1,
		DialerRetries: 1,
		PoolSize:      1,
	})
}
