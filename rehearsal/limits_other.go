//go:build !unix

package rehearsal

// raiseFileLimit does nothing where there is no open-file limit to raise,
// and reports the wish as the limit.
func raiseFileLimit(want uint64) uint64 { return want }
