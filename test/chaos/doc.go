// Package chaos is the fault-injection safety suite. Every scenario runs
// against real redis-server processes (and PostgreSQL), records a history of
// what each client believed and did, and checks it:
//
//   - S1: no two claimed validity windows of one lock overlap, and no more
//     than N of a semaphore with N permits (MaxConcurrent);
//   - S2: a fenced store never accepts a token lower than one it accepted;
//   - S3: no lock key ever exists without a TTL;
//   - S4: no update of a read-modify-write counter guarded by the lock is lost;
//   - fences handed to successive holders strictly increase.
//
// Each scenario also runs a naive variant written inside the test (SETNX
// then EXPIRE, GET-then-DEL release, renewal without a local deadline, no
// WAIT, a counter without a floor, Redlock without the elapsed-time check,
// an INCR/DECR counter semaphore, expiring permits without an owner check,
// redlease without its failover quarantine)
// and asserts that the same checker catches it: a check that cannot fail
// proves nothing.
//
// Timestamps are CLOCK_MONOTONIC read explicitly, so histories recorded by
// helper processes compare with the test's own.
package chaos
