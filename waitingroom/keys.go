package waitingroom

// keys are one event's Redis keys. They share the hash tag {event}, so they
// live in one Redis Cluster slot and every script touches one slot only.
type keys struct {
	base                                       string
	q, hb, seq, meta, pre, lease, li, held     string
	strikes, state, admitter, soldout, waitlst string
	flags, notify                              string
}

// keyspace is the room's key prefix (Options.Prefix): every part of the
// room names its keys through it, so they all agree on them.
type keyspace string

// event returns the event's keys.
func (p keyspace) event(eventID string) keys {
	b := string(p) + "wr:{" + eventID + "}:"
	return keys{base: b,
		q: b + "q", hb: b + "hb", seq: b + "seq", meta: b + "meta", pre: b + "pre",
		lease: b + "lease", li: b + "li", held: b + "held", strikes: b + "strikes",
		state: b + "state", admitter: b + "admitter", soldout: b + "soldout", waitlst: b + "waitlist",
		flags: b + "flags", notify: b + "notify",
	}
}

func (k keys) ip(addr string) string     { return k.base + "ip:" + addr }
func (k keys) device(id string) string   { return k.base + "dev:" + id }
func (k keys) proof(nonce string) string { return k.base + "pow:" + nonce }

func (k keys) join() []string {
	return []string{k.q, k.hb, k.lease, k.seq, k.meta, k.pre, k.strikes, k.soldout, k.waitlst, k.state}
}

func (k keys) status() []string {
	return []string{k.q, k.hb, k.lease, k.soldout, k.waitlst, k.state, k.li}
}

func (k keys) tick() []string {
	return []string{k.q, k.hb, k.lease, k.meta, k.state, k.admitter, k.soldout, k.li}
}

// notify is one channel for every event: classic Pub/Sub, which a Redis
// Cluster forwards to every node, so each process's one subscription hears
// every event's admissions whichever node it sits on.
func (p keyspace) notify() string { return string(p) + "wr:notify" }
