package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/tickets"
)

const gateUsage = `usage:
  encore gate [--manifest <file>] [--addr <host:port>] [--db <ledger>] [--event <event_id>] [--offline]
  encore gate import --manifest <file> [--db <ledger>]
  encore gate sync --from <offline scanner's db> [--db <ledger>]
  encore gate status [--db <ledger>]

The venue gate: imports a manifest (encore manifest export) into a SQLite ledger
in WAL mode and serves GET /healthz, POST /v1/scan and GET /metrics. Gates on
one host share one ledger file; if it fails, scans are refused. --offline runs
a scanner on its own copy that stays open without the LAN and may let a
ticket in twice; encore gate sync reports those double entries.

flags shared by every form:
  --db           ledger file (default ENCORE_DATA_DIR/gate/ledger.db; offline.db with --offline)
  --verify-key   Ed25519 public key (hex) that signs manifests (default: from ENCORE_MANIFEST_SIGNING_SEED)
  --sync         SQLite synchronous level: FULL (default: an entry survives a power cut) or NORMAL`

type gateFlags struct {
	fs        *flag.FlagSet
	db        *string
	verifyKey *string
	sync      *string
}

func newGateFlags(name string) gateFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(os.Stderr, gateUsage) }
	return gateFlags{fs: fs,
		db:        fs.String("db", "", "ledger file"),
		verifyKey: fs.String("verify-key", "", "Ed25519 public key (hex) of the exporter"),
		sync:      fs.String("sync", "FULL", "SQLite synchronous level: FULL or NORMAL"),
	}
}

// gateKeys are the manifest keys a gate needs: the encryption key and the
// exporter's public key (from --verify-key, else derived from the seed).
func gateKeys(cfg config.Config, verifyKey string) (manifest.Keys, error) {
	enc, err := tickets.ParseKey(cfg.ManifestKey.Reveal())
	if err != nil {
		return manifest.Keys{}, fmt.Errorf("ENCORE_MANIFEST_KEY: %w", err)
	}
	if verifyKey != "" {
		pub, err := hex.DecodeString(verifyKey)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return manifest.Keys{}, errors.New("--verify-key: want 64 hex characters (an Ed25519 public key)")
		}
		return manifest.Keys{Encryption: enc, Verify: pub}, nil
	}
	return manifest.KeysFromConfig(cfg)
}

func (f gateFlags) open(cfg config.Config, offline bool) (*gate.Store, manifest.Keys, error) {
	keys, err := gateKeys(cfg, *f.verifyKey)
	if err != nil {
		return nil, keys, err
	}
	path := *f.db
	if path == "" {
		name := "ledger.db"
		if offline {
			name = "offline.db"
		}
		path = system.DataPath(cfg, "gate", name)
	}
	st, err := gate.OpenStore(path, keys.Encryption, gate.StoreOptions{Synchronous: *f.sync})
	return st, keys, err
}

func runGate(ctx context.Context, cfg config.Config, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "import":
			return runGateImport(ctx, cfg, args[1:])
		case "sync":
			return runGateSync(ctx, cfg, args[1:])
		case "status":
			return runGateStatus(ctx, cfg, args[1:])
		case "help", "-h", "--help":
			fmt.Println(gateUsage)
			return nil
		}
	}
	f := newGateFlags("gate")
	file := f.fs.String("manifest", "", "manifest to import before serving")
	addr := f.fs.String("addr", cfg.GateAddr, "listen address")
	event := f.fs.String("event", "", "event this gate admits (default: the manifest's)")
	offline := f.fs.Bool("offline", false, "offline scanner on its own copy (see usage)")
	if err := f.fs.Parse(args); err != nil {
		return exitCode(2)
	}
	log := system.Logger(cfg, os.Stderr)
	st, keys, err := f.open(cfg, *offline)
	if err != nil {
		return err
	}
	defer st.Close()
	if *file != "" {
		ev, err := importManifest(ctx, st, keys, *file, log)
		if err != nil {
			return err
		}
		if *event == "" {
			*event = ev
		}
	}
	if *event == "" {
		ms, err := st.Manifests(ctx)
		if err != nil {
			return err
		}
		if len(ms) != 1 {
			return fmt.Errorf("the ledger %s holds %d manifests: pass --manifest or --event", st.Path(), len(ms))
		}
		*event = ms[0].EventID
	}
	mode := gate.ModeLedger
	if *offline {
		mode = gate.ModeOffline
		log.Warn("OFFLINE SCANNER: this copy admits on its own; a ticket used at another scanner before the next sync "+
			"gets in again. When the LAN is back run: encore gate sync --from "+st.Path(), "db", st.Path())
	}
	reg := system.Registry()
	g := &gate.Gate{Store: st, EventID: *event, Metrics: gate.NewMetrics(reg), Log: log}
	srv := &gate.Server{Gate: g, Mode: mode, Gatherer: reg}
	bound, done, err := system.Serve(ctx, *addr, srv.Handler())
	if err != nil {
		return err
	}
	log.Info("gate listening", "url", system.HTTPURL(bound.String()), "event", *event, "ledger", st.Path(), "mode", mode)
	return <-done
}

// importManifest opens and imports a file and returns its event. A file
// already imported, or older than what the ledger holds, is not an error
// when serving: the ledger's newer list stands.
func importManifest(ctx context.Context, st *gate.Store, keys manifest.Keys, file string, log *slog.Logger) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	m, err := manifest.Open(data, keys, time.Now())
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	res, err := st.Import(ctx, m, time.Now())
	var verr *gate.VersionError
	if errors.As(err, &verr) && verr.Version <= verr.Held && log != nil {
		log.Warn("manifest not imported: the ledger holds the same or a later version", "file", file,
			"version", m.Version, "held", verr.Held)
		return m.EventID, nil
	}
	if err != nil {
		return "", err
	}
	if log != nil {
		log.Info("manifest imported", "event", res.EventID, "kind", res.Kind, "version", res.Version,
			"from_version", res.FromVersion, "tickets", res.Tickets, "revoked", res.Revoked)
	}
	return m.EventID, nil
}

func runGateImport(ctx context.Context, cfg config.Config, args []string) error {
	f := newGateFlags("gate import")
	file := f.fs.String("manifest", "", "manifest file (required)")
	if err := f.fs.Parse(args); err != nil || *file == "" {
		fmt.Fprintln(os.Stderr, gateUsage)
		return exitCode(2)
	}
	st, keys, err := f.open(cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	data, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	m, err := manifest.Open(data, keys, time.Now())
	if err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	res, err := st.Import(ctx, m, time.Now())
	if err != nil {
		return err
	}
	fmt.Printf("imported %s manifest for %s into %s: version %d (was %d), %d tickets listed, %d revoked\n",
		res.Kind, res.EventID, st.Path(), res.Version, res.FromVersion, res.Tickets, res.Revoked)
	return nil
}

func runGateSync(ctx context.Context, cfg config.Config, args []string) error {
	f := newGateFlags("gate sync")
	from := f.fs.String("from", "", "the offline scanner's database (required)")
	if err := f.fs.Parse(args); err != nil || *from == "" {
		fmt.Fprintln(os.Stderr, gateUsage)
		return exitCode(2)
	}
	ledger, keys, err := f.open(cfg, false)
	if err != nil {
		return err
	}
	defer ledger.Close()
	local, err := gate.OpenStore(*from, keys.Encryption, gate.StoreOptions{Synchronous: *f.sync})
	if err != nil {
		return err
	}
	defer local.Close()
	rep, err := gate.Sync(ctx, ledger, local, time.Now())
	if err != nil {
		return err
	}
	fmt.Printf("synced %s into %s: %d entries pushed, %d already there, %d pulled back\n",
		*from, ledger.Path(), rep.Pushed, rep.AlreadyThere, rep.Pulled)
	if len(rep.Doubles) == 0 {
		fmt.Println("no double entries")
		return nil
	}
	fmt.Printf("%d DOUBLE ENTRIES (a ticket let in twice):\n", len(rep.Doubles))
	for _, d := range rep.Doubles {
		fmt.Printf("  %s seat %s: first %s at %s, again %s at %s\n", d.TicketID, d.SeatID,
			d.First.EnteredAt.Format(time.RFC3339), d.First.GateID, d.Second.EnteredAt.Format(time.RFC3339), d.Second.GateID)
	}
	return nil
}

func runGateStatus(ctx context.Context, cfg config.Config, args []string) error {
	f := newGateFlags("gate status")
	if err := f.fs.Parse(args); err != nil {
		return exitCode(2)
	}
	st, _, err := f.open(cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	ms, err := st.Manifests(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("ledger %s\n", st.Path())
	for _, m := range ms {
		fmt.Printf("  %s: %s version %d, expires %s, %d valid, %d revoked, %d entered\n", m.EventID, m.Kind, m.Version,
			m.ExpiresAt.Format(time.RFC3339), m.Tickets, m.Revoked, m.Entries)
	}
	doubles, err := st.DoubleEntries(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("  %d double entries reported by offline scanners\n", len(doubles))
	return nil
}
