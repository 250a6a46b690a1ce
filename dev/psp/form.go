package psp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Helpers for Stripe's form encoding: metadata[key]=v, expand[0]=x,
// automatic_payment_methods[enabled]=true.

func formStr(f url.Values, key string) (string, bool) {
	v, ok := f[key]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

// formInt parses an integer parameter; ok is false when it is absent.
func formInt(f url.Values, key string) (n int64, ok bool, e *apiError) {
	v, present := formStr(f, key)
	if !present || v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false, &apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "parameter_invalid_integer", Param: key,
			Message: fmt.Sprintf("Invalid integer: %s", v)}}
	}
	return n, true, nil
}

// formNeededInt is formInt for a parameter that must be given:
// parameter_missing when it is not.
func formNeededInt(f url.Values, key string) (int64, *apiError) {
	n, ok, e := formInt(f, key)
	if e == nil && !ok {
		e = missingParam(key)
	}
	return n, e
}

func formBool(f url.Values, key string) (b bool, ok bool, e *apiError) {
	v, present := formStr(f, key)
	if !present || v == "" {
		return false, false, nil
	}
	switch strings.ToLower(v) {
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	}
	return false, false, &apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Code: "parameter_invalid_boolean", Param: key,
		Message: fmt.Sprintf("Invalid boolean: %s", v)}}
}

// formMap collects prefix[key]=value pairs. present reports whether any such
// pair (or a bare "prefix=" meaning "unset all") was sent; clear reports the
// bare form.
func formMap(f url.Values, prefix string) (m map[string]string, present, clear bool) {
	m = map[string]string{}
	if v, ok := f[prefix]; ok && len(v) > 0 && v[len(v)-1] == "" {
		present, clear = true, true
	}
	for k, vs := range f {
		if !strings.HasPrefix(k, prefix+"[") || !strings.HasSuffix(k, "]") || len(vs) == 0 {
			continue
		}
		m[k[len(prefix)+1:len(k)-1]] = vs[len(vs)-1]
		present = true
	}
	return m, present, clear
}

// formList collects key=a, key[]=b and key[0]=c, key[1]=d style lists.
func formList(f url.Values, key string) []string {
	var out []string
	out = append(out, f[key]...)
	out = append(out, f[key+"[]"]...)
	type idx struct {
		i int
		v string
	}
	var indexed []idx
	for k, vs := range f {
		if !strings.HasPrefix(k, key+"[") || !strings.HasSuffix(k, "]") {
			continue
		}
		n, err := strconv.Atoi(k[len(key)+1 : len(k)-1])
		if err != nil {
			continue
		}
		for _, v := range vs {
			indexed = append(indexed, idx{n, v})
		}
	}
	sort.SliceStable(indexed, func(a, b int) bool { return indexed[a].i < indexed[b].i })
	for _, x := range indexed {
		out = append(out, x.v)
	}
	return out
}

func formExpand(f url.Values) expandSet {
	e := expandSet{}
	for _, v := range formList(f, "expand") {
		e[v] = true
	}
	return e
}

// canonicalParams is the parameter fingerprint used by idempotency checks:
// keys sorted, so the same parameters in another order still match. The
// values of sensitiveParams are hashed: idempotency records are stored.
func canonicalParams(f url.Values) string {
	var g url.Values // f with the sensitive values hashed, made on demand
	for _, key := range sensitiveParams {
		vs, ok := f[key]
		if !ok {
			continue
		}
		if g == nil {
			g = make(url.Values, len(f))
			for k, v := range f {
				g[k] = v
			}
		}
		h := make([]string, len(vs))
		for i, v := range vs {
			sum := sha256.Sum256([]byte(v))
			h[i] = "sha256:" + hex.EncodeToString(sum[:])
		}
		g[key] = h
	}
	if g == nil {
		return f.Encode()
	}
	return g.Encode()
}
