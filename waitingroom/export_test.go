package waitingroom

// ScriptHashes name the SHA1s of every script a room sends, so a test can
// tell which ran.
func ScriptHashes() map[string]string {
	return map[string]string{"join": joinScript.Hash(), "status": statusScript.Hash(), "lead": leadScript.Hash(),
		"tick": tickScript.Hash(), "check": checkScript.Hash(), "extend": extendScript.Hash(),
		"settle": settleScript.Hash(), "offer": offerScript.Hash(), "revoke": revokeScript.Hash(),
		"risk": riskScript.Hash(), "flag": flagScript.Hash()}
}
