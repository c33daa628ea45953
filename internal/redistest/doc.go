// Package redistest starts real redis-server and redis-sentinel processes for
// the tests of other packages: a standalone server, N independent servers (for
// Redlock), a master with replicas, a master with replicas watched by three
// Sentinels, and a three-master Cluster.
//
// The lock's safety claims are about what real Redis does when things go
// wrong: a master that dies before its replica has the key, a holder frozen by
// SIGSTOP while its lease runs out, a node that comes back empty, a node whose
// clock leaps forward, a Sentinel failover. A mock can only replay what its
// author believed Redis does, so it cannot prove any of that; these tests run
// the servers that production runs and break them with signals.
//
// Every server listens on a free port of 127.0.0.1 only, keeps its config,
// log and data in its own t.TempDir(), and is killed and reaped in t.Cleanup.
// Processes also get SIGKILL as their parent-death signal on Linux, so a test
// binary that crashes does not leave servers behind.
//
// Server.Monitor shows what a server ran, in its order, scripts' commands
// included: a test can count the calls a client made, not only what the
// client reports.
//
// The binaries come from PATH; RequireBinaries fails (not skips) the test when
// they are missing, because a skipped safety test looks like a passing one.
package redistest
