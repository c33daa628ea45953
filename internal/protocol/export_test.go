package protocol

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// RaiseFenceScript lets the tests send tokens RaiseFence refuses before
// sending, as another implementation could.
var RaiseFenceScript = raiseFenceScript

// FullReleaseCall is Release's call with every key and argument, as the
// clients before releaseCall left any out sent it.
func FullReleaseCall(key, value string, a ReleaseArgs) Call {
	return Call{releaseScript, scriptKeys(key, releaseSuffixes...), releaseArgv(value, a)}
}

// ReleaseCall is the call Release makes.
var ReleaseCall = releaseCall

// OldReadCall is the read script's call as builds before the waiting line
// sent it: four keys, two arguments (no waiting line asked for).
func OldReadCall(key string, permits int) Call {
	return Call{readScript, scriptKeys(key, holdersSuffix, fenceSuffix, epochSuffix), []any{readValueBytes, permits}}
}

// Variant is script s as EVAL runs it with old replaced by new: a naive
// variant a test must catch. It panics when old is not in the script, so
// a variant cannot silently stop being one.
func Variant(s *Script, old, repl string) *redis.Script {
	if !strings.Contains(s.src, old) {
		panic("protocol.Variant: " + s.function + " has no " + old)
	}
	return redis.NewScript(strings.Replace(s.src, old, repl, 1))
}

// ReleaseSharedScript is ReleaseShared's script.
var ReleaseSharedScript = releaseSharedScript

// ReleaseSharedCall is ReleaseShared's call.
var ReleaseSharedCall = releaseSharedCall
