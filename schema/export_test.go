package schema

// ScramVerifierWith exposes the verifier with a chosen salt, so a test can
// compare it with the one PostgreSQL computes itself.
var ScramVerifierWith = scramVerifierWith
