package psp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// A subset of Stripe's search query language for PaymentIntents:
//
//	metadata['booking_id']:'B1' AND status:'requires_capture'
//	amount>1000 OR currency:"eur"
//	-status:'canceled'
//
// Fields: metadata['key'], status, currency, amount, created, description
// (":" is equality, "~" substring for description), payment_method.
// Operators: ":" (equals), ">", "<", ">=", "<=", "~" (contains); a leading
// "-" negates a clause. Clauses are joined by AND or OR (not both), at most
// ten, as at Stripe.

type searchClause struct {
	negate bool
	field  string // "metadata" or a plain field
	key    string // metadata key
	op     string
	value  string
}

func parseSearch(q string) (func(*intent) bool, error) {
	toks, err := tokenizeSearch(q)
	if err != nil {
		return nil, err
	}
	var clauses []searchClause
	joiner := ""
	expectClause := true
	for _, t := range toks {
		if !expectClause {
			up := strings.ToUpper(t)
			if up != "AND" && up != "OR" {
				return nil, fmt.Errorf("expected AND or OR before %q", t)
			}
			if joiner != "" && joiner != up {
				return nil, errors.New("you cannot combine AND and OR in the same query")
			}
			joiner = up
			expectClause = true
			continue
		}
		c, err := parseClause(t)
		if err != nil {
			return nil, err
		}
		clauses = append(clauses, c)
		expectClause = false
	}
	if len(clauses) == 0 || expectClause {
		return nil, errors.New("the search query is incomplete")
	}
	if len(clauses) > 10 {
		return nil, errors.New("a search query can have at most 10 clauses")
	}
	return func(pi *intent) bool {
		for _, c := range clauses {
			m := c.match(pi)
			if joiner == "OR" && m {
				return true
			}
			if joiner != "OR" && !m {
				return false
			}
		}
		return joiner != "OR"
	}, nil
}

// tokenizeSearch splits on spaces outside quotes.
func tokenizeSearch(q string) ([]string, error) {
	var toks []string
	var cur strings.Builder
	var quote rune
	escaped := false
	for _, r := range q {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\' && quote != 0:
			cur.WriteRune(r)
			escaped = true
		case quote != 0:
			cur.WriteRune(r)
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			cur.WriteRune(r)
			quote = r
		case unicode.IsSpace(r):
			if cur.Len() > 0 {
				toks = append(toks, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quoted string in search query")
	}
	if cur.Len() > 0 {
		toks = append(toks, cur.String())
	}
	return toks, nil
}

func unquote(v string) (string, error) {
	if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
		inner := v[1 : len(v)-1]
		var b strings.Builder
		escaped := false
		for _, r := range inner {
			if escaped {
				b.WriteRune(r)
				escaped = false
				continue
			}
			if r == '\\' {
				escaped = true
				continue
			}
			b.WriteRune(r)
		}
		return b.String(), nil
	}
	if strings.ContainsAny(v, `'"`) {
		return "", fmt.Errorf("malformed value %s", v)
	}
	return v, nil
}

func parseClause(t string) (searchClause, error) {
	var c searchClause
	if strings.HasPrefix(t, "-") {
		c.negate = true
		t = t[1:]
	}
	rest := t
	if strings.HasPrefix(rest, "metadata[") {
		end := strings.Index(rest, "]")
		if end < 0 {
			return c, fmt.Errorf("malformed metadata field in %q", t)
		}
		k, err := unquote(rest[len("metadata["):end])
		if err != nil || k == "" {
			return c, fmt.Errorf("malformed metadata key in %q", t)
		}
		c.field, c.key = "metadata", k
		rest = rest[end+1:]
	} else {
		i := strings.IndexAny(rest, ":<>~")
		if i <= 0 {
			return c, fmt.Errorf("malformed search clause %q", t)
		}
		c.field = strings.ToLower(rest[:i])
		rest = rest[i:]
	}
	for _, op := range []string{">=", "<=", ":", ">", "<", "~"} {
		if strings.HasPrefix(rest, op) {
			c.op = op
			rest = rest[len(op):]
			break
		}
	}
	if c.op == "" {
		return c, fmt.Errorf("malformed search clause %q", t)
	}
	v, err := unquote(rest)
	if err != nil {
		return c, err
	}
	c.value = v
	switch c.field {
	case "metadata", "status", "currency", "payment_method":
		if c.op != ":" {
			return c, fmt.Errorf("field %s only supports ':'", c.field)
		}
	case "description":
		if c.op != ":" && c.op != "~" {
			return c, errors.New("field description supports ':' and '~'")
		}
	case "amount", "created":
		if c.op == "~" {
			return c, fmt.Errorf("field %s does not support '~'", c.field)
		}
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return c, fmt.Errorf("field %s needs an integer value, not %q", c.field, v)
		}
	default:
		return c, fmt.Errorf("unsupported search field %q (supported: metadata['key'], status, currency, amount, created, description, payment_method)", c.field)
	}
	return c, nil
}

func (c searchClause) match(pi *intent) bool {
	var m bool
	switch c.field {
	case "metadata":
		v, ok := pi.Metadata[c.key]
		m = ok && v == c.value
	case "status":
		m = pi.Status == c.value
	case "currency":
		m = pi.Currency == strings.ToLower(c.value)
	case "payment_method":
		m = pi.PaymentMethod == c.value
	case "description":
		if c.op == "~" {
			m = strings.Contains(strings.ToLower(pi.Description), strings.ToLower(c.value))
		} else {
			m = pi.Description == c.value
		}
	case "amount", "created":
		x := pi.Amount
		if c.field == "created" {
			x = pi.Created
		}
		n, _ := strconv.ParseInt(c.value, 10, 64)
		switch c.op {
		case ":":
			m = x == n
		case ">":
			m = x > n
		case "<":
			m = x < n
		case ">=":
			m = x >= n
		case "<=":
			m = x <= n
		}
	}
	return m != c.negate
}
