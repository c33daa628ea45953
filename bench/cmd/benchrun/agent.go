package main

import (
	"context"
	"slices"
	"time"

	"github.com/redlease/redlease/bench"
)

// startAgent starts the lock agent of the uncontended rows on the server
// at addr, with the scenario's lease TTL. Its Locker runs lockctl's
// default, FunctionsAuto, which settles on scripts or functions at its
// first call: besideRedlease makes that call come before the functions
// row loads the library, so the agent runs the scripts of the "redlease"
// row it is compared to.
func startAgent(ctx context.Context, addr string, ttl time.Duration) (*bench.Agent, error) {
	lockctl, err := bench.Lockctl(ctx) // built by run already: $REDLEASE_LOCKCTL names it
	if err != nil {
		return nil, err
	}
	return bench.StartAgent(lockctl, addr, "--ttl", ttl.String())
}

// besideRedlease puts the agent rows right after the "redlease" row, so
// that they are warmed (and make their first calls) before the functions
// row, and read beside it in the tables.
func besideRedlease(libs, agent []*bench.Lib) []*bench.Lib {
	i := slices.IndexFunc(libs, func(l *bench.Lib) bool { return l.Name == "redlease" })
	return slices.Concat(libs[:i+1], agent, libs[i+1:])
}

// processLibs are the processes scenario's libraries, without the agent
// rows when -agent=false.
func processLibs(s settings) []bench.ProcessLib {
	libs := bench.ProcessLibs()
	if s.agent {
		return libs
	}
	return slices.DeleteFunc(libs, func(l bench.ProcessLib) bool { return l.Family == bench.FamilyAgent })
}

// withoutAgent is rows less the agent's (and their hop floor's): the plots compare libraries on
// one scale, and the agent rows, several times slower, have their own
// table.
func withoutAgent(rows []row) []row {
	return slices.DeleteFunc(slices.Clone(rows), func(r row) bool {
		return r.Family == bench.FamilyAgent || r.Family == bench.FamilyAgentCalls || r.Family == bench.FamilyHopFloor
	})
}
