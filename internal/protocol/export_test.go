package protocol

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
