//go:build !unix

package rehearsal

// raiseFileLimit does nothing where there is no open-file limit to raise.
func raiseFileLimit(uint64) {}
