package seathint

// ScriptHashes name the SHA1s of every script hints send, so a test can tell
// which ran.
func ScriptHashes() map[string]string {
	limit, guarded, body := limitedHold.Hashes()
	return map[string]string{"hold": holdScript.Hash(), "release": releaseScript.Hash(),
		"limit": limit, "limited hold": guarded, "hold after the limit": body}
}
