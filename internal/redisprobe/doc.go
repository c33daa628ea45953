// Package redisprobe is how the redlease controller talks to Redis: a pool of
// go-redis clients shared between DistributedLocks, and the few read-mostly
// operations the controller needs (probe a server, ask Sentinel for the
// master, read a Cluster's shards, read and apply the replica guard, observe
// a lock's holder and fence counter).
//
// It connects only with the credentials it is given: the controller passes
// those a DistributedLock (or its store) references, so what it can do to a
// server is bounded by what those credentials allow (by construction; no
// test). A lock value read from Redis is turned into the holder identity at
// once (protocol.IdentityFromValue) and never kept, returned or put into an
// error (ReadHolder's result has no field for it; the controller's status,
// Events and logs are searched for it by TestHolder in controllers).
//
// Every operation is bounded by short client timeouts and does not retry: the
// controller's requeue is the retry.
package redisprobe
