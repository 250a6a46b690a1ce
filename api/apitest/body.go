package apitest

import "io"

// Endless is a request body of Head, then Rep over and over while the body
// stays within Size bytes, then Tail. N counts the bytes a reader took from
// it, so a test can tell whether a parser or a handler stopped at a cap or
// read the whole body.
type Endless struct {
	Head, Rep, Tail string
	Size            int
	N               int
	pending         string
}

// Read fills p from what is left of the body.
func (b *Endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if b.pending == "" {
			switch {
			case b.N+n == 0 && b.Head != "":
				b.pending = b.Head
			case b.N+n+len(b.Rep) <= b.Size:
				b.pending = b.Rep
			case b.Tail != "":
				b.pending, b.Tail = b.Tail, ""
			default:
				b.N += n
				if n == 0 {
					return 0, io.EOF
				}
				return n, nil
			}
		}
		c := copy(p[n:], b.pending)
		b.pending = b.pending[c:]
		n += c
	}
	b.N += n
	return n, nil
}

// Close does nothing: a request may carry the body as it is.
func (b *Endless) Close() error { return nil }
