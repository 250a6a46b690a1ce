package psp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Persistence: the state file (Config.StatePath) is a JSON snapshot that is
// only ever replaced atomically (temp file, fsync, rename). Each mutation is
// appended to StatePath+".journal" as one JSON line before the API answers,
// so that a process crash loses nothing that was acknowledged. Loading reads
// the snapshot, replays the journal (ignoring a torn last line) and writes a
// fresh snapshot. The journal is folded into the snapshot when it outgrows
// it, and on Close. A mutation thus costs one small append, not a rewrite of
// the whole state.

const stateVersion = 1

type snapshot struct {
	Version     int           `json:"version"`
	APIVersion  string        `json:"api_version"`
	Seq         int64         `json:"seq"`
	Intents     []*intent     `json:"intents"`
	Charges     []*charge     `json:"charges"`
	Refunds     []*refund     `json:"refunds"`
	Events      []*event      `json:"events"`
	Idempotency []*idemRecord `json:"idempotency"`
	Deliveries  []*delivery   `json:"deliveries"`
	// Methods are the card PaymentMethods created with POST
	// /v1/payment_methods, ascending Seq. Absent from older state files.
	Methods []*paymentMethod `json:"payment_methods"`
}

const (
	opPutIntent   = "intent"
	opPutCharge   = "charge"
	opPutRefund   = "refund"
	opPutEvent    = "event"
	opPutIdem     = "idem"
	opDelIdem     = "del_idem"
	opPutDelivery = "delivery"
	opDelDelivery = "del_delivery"
	opPutMethod   = "payment_method"
)

// record is one journal line. Records are whole-object upserts or deletes,
// so replaying one twice is harmless.
type record struct {
	Op       string         `json:"op"`
	Seq      int64          `json:"seq,omitempty"`
	ID       string         `json:"id,omitempty"`
	Intent   *intent        `json:"intent,omitempty"`
	Charge   *charge        `json:"charge,omitempty"`
	Refund   *refund        `json:"refund,omitempty"`
	Event    *event         `json:"event,omitempty"`
	Idem     *idemRecord    `json:"idem,omitempty"`
	Delivery *delivery      `json:"delivery,omitempty"`
	Method   *paymentMethod `json:"payment_method,omitempty"`
}

type store struct {
	path     string
	journal  *os.File
	jsize    int64
	snapSize int64
}

const minCompactBytes = 4 << 20

func openStore(path string) (*store, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("psp: state directory: %w", err)
		}
	}
	return &store{path: path}, nil
}

func (st *store) close() error {
	if st.journal == nil {
		return nil
	}
	err := st.journal.Close()
	st.journal = nil
	return err
}

// logRec queues a journal record; commitLocked writes the queue.
func (s *Server) logRec(r record) {
	if s.st == nil {
		return
	}
	s.pending = append(s.pending, r)
}

// commitLocked appends the queued records to the journal in one write.
func (s *Server) commitLocked() {
	if s.st == nil || len(s.pending) == 0 {
		s.pending = s.pending[:0]
		return
	}
	var buf bytes.Buffer
	for _, r := range s.pending {
		r.Seq = s.seq
		b, err := json.Marshal(r)
		if err != nil {
			s.log.Error("state: encoding journal record", "err", err)
			continue
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	s.pending = s.pending[:0]
	if s.st.journal == nil {
		s.log.Error("state: journal is closed; mutation kept in memory only")
		return
	}
	n, err := s.st.journal.Write(buf.Bytes())
	s.st.jsize += int64(n)
	if err != nil {
		s.log.Error("state: appending to journal", "err", err)
	}
	if s.st.jsize > max(minCompactBytes, s.st.snapSize) {
		if err := s.compactLocked(); err != nil {
			s.log.Error("state: writing snapshot", "err", err)
		}
	}
}

// applyLocked replays one journal record.
func (s *Server) applyLocked(r record) {
	if r.Seq > s.seq {
		s.seq = r.Seq
	}
	switch r.Op {
	case opPutIntent:
		if r.Intent != nil {
			s.intents[r.Intent.ID] = r.Intent
		}
	case opPutCharge:
		if r.Charge != nil {
			s.charges[r.Charge.ID] = r.Charge
		}
	case opPutRefund:
		if r.Refund != nil {
			s.refunds[r.Refund.ID] = r.Refund
		}
	case opPutEvent:
		if r.Event != nil {
			s.addEventLocked(r.Event)
		}
	case opPutIdem:
		if r.Idem != nil {
			s.idem[r.Idem.Key] = r.Idem
		}
	case opDelIdem:
		delete(s.idem, r.ID)
	case opPutMethod:
		if r.Method != nil {
			s.methods[r.Method.ID] = r.Method
		}
	case opPutDelivery:
		if r.Delivery != nil {
			s.insertDeliveryLocked(r.Delivery)
		}
	case opDelDelivery:
		for _, q := range s.queues {
			for _, d := range q {
				if d.ID == r.ID {
					s.removeDeliveryLocked(d)
					break
				}
			}
		}
	}
}

// load reads the snapshot and the journal, then writes a fresh snapshot.
func (s *Server) load() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	data, err := os.ReadFile(st.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("psp: reading state: %w", err)
	default:
		var snap snapshot
		if err := json.Unmarshal(data, &snap); err != nil {
			return fmt.Errorf("psp: state file %s is not valid JSON: %w", st.path, err)
		}
		if snap.Version > stateVersion {
			return fmt.Errorf("psp: state file %s has version %d, newer than this build understands (%d)", st.path, snap.Version, stateVersion)
		}
		s.seq = snap.Seq
		for _, x := range snap.Intents {
			s.intents[x.ID] = x
		}
		for _, x := range snap.Charges {
			s.charges[x.ID] = x
		}
		for _, x := range snap.Refunds {
			s.refunds[x.ID] = x
		}
		sortEvents(snap.Events)
		for _, x := range snap.Events {
			s.addEventLocked(x)
		}
		for _, x := range snap.Idempotency {
			s.idem[x.Key] = x
		}
		for _, x := range snap.Deliveries {
			s.insertDeliveryLocked(x)
		}
		for _, x := range snap.Methods {
			s.methods[x.ID] = x
		}
	}
	jpath := st.path + ".journal"
	if f, err := os.Open(jpath); err == nil {
		n, torn, err := s.replay(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("psp: reading journal %s: %w", jpath, err)
		}
		if torn {
			s.log.Warn("state: ignored a torn last journal line (the process stopped mid-write)", "path", jpath)
		}
		if n > 0 {
			s.log.Info("state: replayed journal", "records", n)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("psp: opening journal: %w", err)
	}
	s.rebuildIndexesLocked()
	j, err := os.OpenFile(jpath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("psp: opening journal: %w", err)
	}
	st.journal = j
	if err := s.compactLocked(); err != nil {
		return err
	}
	s.log.Info("state loaded", "path", st.path, "intents", len(s.intents), "payment_methods", len(s.methods), "refunds", len(s.refunds), "pending_webhooks", s.deliveryN)
	return nil
}

func (s *Server) replay(r io.Reader) (n int, torn bool, err error) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var rec record
			if jerr := json.Unmarshal(line, &rec); jerr != nil {
				if err == io.EOF {
					return n, true, nil // torn final line
				}
				return n, false, fmt.Errorf("record %d: %w", n+1, jerr)
			}
			s.applyLocked(rec)
			n++
		}
		if err == io.EOF {
			return n, false, nil
		}
		if err != nil {
			return n, false, err
		}
	}
}

func (s *Server) rebuildIndexesLocked() {
	s.intentOrder = s.intentOrder[:0]
	for _, pi := range s.intents {
		s.intentOrder = append(s.intentOrder, pi)
		if pi.Metadata == nil {
			pi.Metadata = map[string]string{}
		}
	}
	sort.Slice(s.intentOrder, func(i, j int) bool { return s.intentOrder[i].Seq < s.intentOrder[j].Seq })
	s.refundOrder = s.refundOrder[:0]
	for _, rf := range s.refunds {
		s.refundOrder = append(s.refundOrder, rf)
	}
	sort.Slice(s.refundOrder, func(i, j int) bool { return s.refundOrder[i].Seq < s.refundOrder[j].Seq })
}

// compactLocked writes the snapshot atomically and empties the journal.
func (s *Server) compactLocked() error {
	st := s.st
	if st == nil {
		return nil
	}
	s.pruneIdemLocked()
	snap := snapshot{Version: stateVersion, APIVersion: APIVersion, Seq: s.seq,
		Intents: s.intentOrder, Refunds: s.refundOrder, Events: s.events,
		Charges: []*charge{}, Idempotency: []*idemRecord{}, Deliveries: []*delivery{}, Methods: []*paymentMethod{}}
	for _, ch := range s.charges {
		snap.Charges = append(snap.Charges, ch)
	}
	sort.Slice(snap.Charges, func(i, j int) bool { return snap.Charges[i].Seq < snap.Charges[j].Seq })
	for _, rec := range s.idem {
		if !rec.inflight {
			snap.Idempotency = append(snap.Idempotency, rec)
		}
	}
	sort.Slice(snap.Idempotency, func(i, j int) bool { return snap.Idempotency[i].Key < snap.Idempotency[j].Key })
	for _, q := range s.queues {
		snap.Deliveries = append(snap.Deliveries, q...)
	}
	sort.Slice(snap.Deliveries, func(i, j int) bool { return snap.Deliveries[i].Seq < snap.Deliveries[j].Seq })
	for _, m := range s.methods {
		snap.Methods = append(snap.Methods, m)
	}
	sort.Slice(snap.Methods, func(i, j int) bool { return snap.Methods[i].Seq < snap.Methods[j].Seq })
	data, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("psp: encoding state: %w", err)
	}
	if err := writeFileAtomic(st.path, data); err != nil {
		return err
	}
	st.snapSize = int64(len(data))
	if st.journal != nil {
		if err := st.journal.Truncate(0); err != nil {
			return fmt.Errorf("psp: truncating journal: %w", err)
		}
		if _, err := st.journal.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("psp: rewinding journal: %w", err)
		}
		st.jsize = 0
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("psp: writing state: %w", err)
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("psp: writing state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("psp: syncing state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("psp: writing state: %w", err)
	}
	if err := os.Chmod(name, 0o600); err != nil {
		return fmt.Errorf("psp: writing state: %w", err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("psp: replacing state: %w", err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
