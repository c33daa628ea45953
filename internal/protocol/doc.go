// Package protocol is the one definition of redlease's Redis format: the
// lock key and the keys and channel derived from it, the lock value, the
// scripts, and the reads of a lock's state. pkg/lock, the controller and
// lockctl all use it, so they cannot disagree; docs/protocol.md describes
// it for other implementations.
//
// The format is a compatibility contract between library versions, the
// controller and lockctl (DESIGN §3): change it only with a new Version and
// a migration note in docs/protocol.md.
package protocol

// Version is the protocol version documented in docs/protocol.md.
const Version = 7
