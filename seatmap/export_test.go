package seatmap

// ScriptHashes name the SHA1s of every script the cache sends, so a test can
// tell which ran.
func ScriptHashes() map[string]string {
	return map[string]string{"store": storeScript.Hash(), "release": releaseScript.Hash()}
}
