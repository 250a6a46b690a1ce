// Package payloadcodec encrypts Temporal payloads (workflow inputs, results,
// signals, updates, activity arguments) before they leave the process, so
// the workflow history Temporal stores holds ciphertext only. It also serves
// the Temporal codec server protocol, so the Web UI can show decoded
// payloads to the staff allowed to reach it.
package payloadcodec

import (
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/encore-tickets/encore/internal/keyenc"
)

// Metadata of an encrypted payload.
const (
	// Encoding is the metadata "encoding" of an encrypted payload.
	Encoding = "binary/encrypted"
	// KeyIDMetadata names the key that encrypted the payload.
	KeyIDMetadata = "encryption-key-id"
)

// keySize is AES-256's.
const keySize = 32

// Errors of Decode. The codec endpoint answers them with 400.
var (
	// ErrUnknownKey: the payload names a key this codec does not hold.
	ErrUnknownKey = errors.New("payloadcodec: payload encrypted under a key this codec does not hold")
	// ErrTampered: the ciphertext does not open (altered or truncated).
	ErrTampered = errors.New("payloadcodec: encrypted payload does not open (altered or truncated)")
)

// Codec encrypts with AES-256-GCM under its current key and decrypts under
// any key it holds, so keys rotate without rewriting history: put the new
// key first and keep the old ones until no running workflow needs them.
type Codec struct {
	current string
	aeads   map[string]cipher.AEAD
}

var _ converter.PayloadCodec = (*Codec)(nil)

// Parse reads a key list as configured: comma-separated id:key entries, the
// key 64 hex characters or base64 of 32 bytes; the first entry is the key new
// payloads are encrypted with, every entry may decrypt.
func Parse(spec string) (*Codec, error) {
	c := &Codec{aeads: map[string]cipher.AEAD{}}
	for _, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, raw, ok := strings.Cut(entry, ":")
		id = strings.TrimSpace(id)
		if !ok || id == "" {
			return nil, errors.New("payloadcodec: each key is id:key")
		}
		if _, dup := c.aeads[id]; dup {
			return nil, fmt.Errorf("payloadcodec: key id %q given twice", id)
		}
		key, err := keyenc.Decode(raw, keySize)
		if err != nil {
			return nil, fmt.Errorf("payloadcodec: key %q: %w", id, err)
		}
		aead, err := keyenc.NewGCM(key)
		if err != nil {
			return nil, err
		}
		c.aeads[id] = aead
		if c.current == "" {
			c.current = id
		}
	}
	if c.current == "" {
		return nil, errors.New("payloadcodec: no key")
	}
	return c, nil
}

// DataConverter is Temporal's default converter with every payload
// encrypted by c: what every client and worker of the system uses.
func (c *Codec) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// Encode encrypts each payload (its data and metadata, marshalled) under the
// current key. The key ID is bound to the ciphertext as additional data, so a
// payload cannot be relabelled to another key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	aead := c.aeads[c.current]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("payloadcodec: marshal payload: %w", err)
		}
		nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(Encoding),
				KeyIDMetadata:              []byte(c.current),
			},
			Data: aead.Seal(nonce, nonce, plain, []byte(c.current)),
		}
	}
	return out, nil
}

// Decode decrypts encrypted payloads and passes every other payload through
// unchanged: histories written before encryption was turned on (and the
// recorded ones the replay tests use) still decode.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[KeyIDMetadata])
		aead, ok := c.aeads[id]
		if !ok {
			return nil, fmt.Errorf("%w (key id %q)", ErrUnknownKey, id)
		}
		data := p.GetData()
		if len(data) < aead.NonceSize()+aead.Overhead() {
			return nil, ErrTampered
		}
		plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], []byte(id))
		if err != nil {
			return nil, ErrTampered
		}
		var dec commonpb.Payload
		if err := proto.Unmarshal(plain, &dec); err != nil {
			return nil, ErrTampered
		}
		out[i] = &dec
	}
	return out, nil
}
