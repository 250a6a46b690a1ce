package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

func readBody(c *gin.Context) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxBodyBytes))
}

// jsonUnmarshal decodes exactly one JSON value.
func jsonUnmarshal(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// storableText reports whether s can be stored and searched: valid UTF-8
// without NUL, which PostgreSQL text refuses.
func storableText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// idempotencyKey reads the Idempotency-Key header: printable ASCII, at most
// 255 characters; empty when absent.
func idempotencyKey(c *gin.Context) (string, *FieldError) {
	k := c.GetHeader("Idempotency-Key")
	if len(k) > 255 {
		return "", &FieldError{"Idempotency-Key", "at most 255 characters"}
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return "", &FieldError{"Idempotency-Key", "printable ASCII only"}
		}
	}
	return k, nil
}

func decodeJSON(c *gin.Context, v any) *FieldError {
	body, err := readBody(c)
	if err != nil {
		return &FieldError{"body", "larger than 16 KiB or unreadable"}
	}
	if err := jsonUnmarshal(body, v); err != nil {
		fe := jsonFieldError(err)
		return &fe
	}
	return nil
}
