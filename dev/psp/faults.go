package psp

import (
	"fmt"
	"strings"
	"time"
)

// FaultHeader is the request header that injects faults into one API call.
const FaultHeader = "Encore-Sandbox-Fault"

// FaultMetadataKey is the PaymentIntent metadata key whose value (same syntax
// as FaultHeader) applies to every later mutating call on that intent and to
// the webhooks those calls emit.
const FaultMetadataKey = "sandbox_fault"

// Timeout modes for timeout_after_success.
const (
	// TimeoutHold keeps the response until the client gives up (its context
	// or HTTP timeout), the hold limit passes, or the server shuts down; the
	// connection is then closed without a response.
	TimeoutHold = "hold"
	// TimeoutDrop closes the connection at once without a response. Note that
	// net/http and stripe-go retry such a request transparently with the same
	// Idempotency-Key, which then replays the stored response.
	TimeoutDrop = "drop"
)

// faultSet is the parsed form of a fault directive list.
type faultSet struct {
	timeout     bool
	timeoutMode string        // "" = configured default
	timeoutHold time.Duration // 0 = configured default
	serverError bool
	latency     time.Duration
	duplicate   bool
	outOfOrder  bool
	delay       time.Duration
	hasDelay    bool
}

func (f faultSet) empty() bool { return f == faultSet{} }

// parseFaults parses directives such as
// "timeout_after_success, latency=200ms, delay_webhook=2s".
// Directives are separated by commas, semicolons or spaces.
func parseFaults(spec string) (faultSet, error) {
	var f faultSet
	fields := strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' })
	for _, field := range fields {
		name, value, hasValue := strings.Cut(strings.TrimSpace(field), "=")
		name = strings.ToLower(strings.TrimSpace(name))
		value = strings.TrimSpace(value)
		var err error // a duration that does not parse
		switch name {
		case "timeout_after_success", "timeout":
			f.timeout = true
			if hasValue {
				switch strings.ToLower(value) {
				case TimeoutHold:
					f.timeoutMode = TimeoutHold
				case TimeoutDrop:
					f.timeoutMode = TimeoutDrop
				default:
					f.timeoutMode = TimeoutHold
					err = setFaultDuration(&f.timeoutHold, "timeout_after_success", value, "hold, drop or a duration")
				}
			}
		case "server_error", "500":
			f.serverError = true
		case "latency":
			err = setFaultDuration(&f.latency, name, value, "a duration such as 200ms")
		case "duplicate_webhook":
			f.duplicate = true
		case "out_of_order_webhook":
			f.outOfOrder = true
		case "delay_webhook":
			err = setFaultDuration(&f.delay, name, value, "a duration such as 2s")
			f.hasDelay = true
		case "":
		default:
			return f, fmt.Errorf("unknown sandbox fault %q (known: timeout_after_success[=hold|drop|<duration>], server_error, latency=<duration>, duplicate_webhook, out_of_order_webhook, delay_webhook=<duration>)", name)
		}
		if err != nil {
			return f, err
		}
	}
	return f, nil
}

// setFaultDuration sets *d to the duration a fault takes: a negative one is
// as wrong as one that does not parse. takes says what was expected.
func setFaultDuration(d *time.Duration, name, value, takes string) error {
	v, err := time.ParseDuration(value)
	if err != nil || v < 0 {
		return fmt.Errorf("%s takes %s, not %q", name, takes, value)
	}
	*d = v
	return nil
}

// merge returns the union of two fault sets; explicit values in o win.
func (f faultSet) merge(o faultSet) faultSet {
	f.timeout = f.timeout || o.timeout
	if o.timeoutMode != "" {
		f.timeoutMode = o.timeoutMode
	}
	if o.timeoutHold != 0 {
		f.timeoutHold = o.timeoutHold
	}
	f.serverError = f.serverError || o.serverError
	if o.latency > f.latency {
		f.latency = o.latency
	}
	f.duplicate = f.duplicate || o.duplicate
	f.outOfOrder = f.outOfOrder || o.outOfOrder
	if o.hasDelay {
		f.delay, f.hasDelay = o.delay, true
	}
	return f
}

// metadataFaults returns the faults configured on an intent's metadata.
// The value was validated when it was set, so errors are ignored.
func metadataFaults(meta map[string]string) faultSet {
	if v := meta[FaultMetadataKey]; v != "" {
		f, _ := parseFaults(v)
		return f
	}
	return faultSet{}
}

// chance draws from the seeded fault generator.
func (s *Server) chance(rate float64) bool {
	if rate <= 0 {
		return false
	}
	if rate >= 1 {
		return true
	}
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Float64() < rate
}
