// Package keyenc decodes the fixed-size secret keys configuration carries
// (ticket sealing, manifest and Temporal payload keys): each may be written
// as hex or as any of the four base64 alphabets, so operators can paste the
// output of whichever tool generated it. It also builds the one cipher those
// keys drive.
package keyenc

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// encodings are the base64 forms tried after hex, padded and raw, standard
// and URL-safe.
var encodings = []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding}

// Decode returns the size-byte key that s spells in hex or base64 (space
// around it ignored). A string that decodes to any other length is refused,
// so a truncated or mistyped key never reaches a cipher.
func Decode(s string, size int) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == size {
		return b, nil
	}
	for _, enc := range encodings {
		if b, err := enc.DecodeString(s); err == nil && len(b) == size {
			return b, nil
		}
	}
	return nil, fmt.Errorf("must be %d bytes as %d hex characters or base64", size, 2*size)
}

// NewGCM is AES-GCM under key (16, 24 or 32 bytes): the authenticated
// cipher that seals ticket secrets, manifests and workflow payloads alike.
func NewGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
