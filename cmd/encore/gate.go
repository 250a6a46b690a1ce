package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/tickets"
)

// ledgerOptions are the flags every form of encore gate shares: where the
// ledger is, which key verifies manifests and how durable a write is.
type ledgerOptions struct {
	db        string
	verifyKey string
	sync      string
}

// gateOptions are encore gate's flags when it serves scans.
type gateOptions struct {
	ledger   ledgerOptions
	manifest string
	addr     string // empty: ENCORE_GATE_ADDR, known only once config is loaded
	event    string
	offline  bool
	reentry  bool     // --reentry: a ticket scanned out may come back in
	zones    []string // --zone name=section,section
}

// gateKeys are the manifest keys a gate needs: the encryption key and the
// exporter's public key (verifyKey, else derived from the seed).
func gateKeys(cfg config.Config, verifyKey string) (manifest.Keys, error) {
	enc, err := tickets.ParseKey(cfg.ManifestKey.Reveal())
	if err != nil {
		return manifest.Keys{}, fmt.Errorf("ENCORE_MANIFEST_KEY: %w", err)
	}
	if verifyKey != "" {
		pub, err := hex.DecodeString(verifyKey)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return manifest.Keys{}, errors.New("--verify-key (or ENCORE_GATE_VERIFY_KEY): want 64 hex characters (an Ed25519 public key)")
		}
		return manifest.Keys{Encryption: enc, Verify: pub}, nil
	}
	return manifest.KeysFromConfig(cfg)
}

// verifyKeyOf is the key the gate verifies manifests with: --verify-key, else
// ENCORE_GATE_VERIFY_KEY; empty means derive it from the signing seed.
func (f ledgerOptions) verifyKeyOf(cfg config.Config) string {
	if f.verifyKey != "" {
		return f.verifyKey
	}
	return cfg.GateVerifyKey
}

// requireVerifyKey refuses, outside development, a gate that would verify
// manifests with a key derived from the signing seed: a venue must hold only
// the public key, or whoever takes a gate machine can sign manifests.
func (f ledgerOptions) requireVerifyKey(cfg config.Config) error {
	if cfg.Development() || f.verifyKeyOf(cfg) != "" {
		return nil
	}
	return fmt.Errorf("encore gate refuses to run with ENCORE_ENV=%s without --verify-key (or ENCORE_GATE_VERIFY_KEY): "+
		"give it the public key that encore keys generate printed for the exporter's ENCORE_MANIFEST_SIGNING_SEED, "+
		"or set ENCORE_ENV=development on a development machine", cfg.Env)
}

func (f ledgerOptions) open(cfg config.Config, offline bool) (*gate.Store, manifest.Keys, error) {
	keys, err := gateKeys(cfg, f.verifyKeyOf(cfg))
	if err != nil {
		return nil, keys, err
	}
	path := f.db
	if path == "" {
		name := "ledger.db"
		if offline {
			name = "offline.db"
		}
		path = system.DataPath(cfg, "gate", name)
	}
	st, err := gate.OpenStore(path, keys.Encryption, gate.StoreOptions{Synchronous: f.sync})
	return st, keys, err
}

func runGate(ctx context.Context, cfg config.Config, o gateOptions) error {
	addr, event := o.addr, o.event
	if addr == "" {
		addr = cfg.GateAddr
	}
	log := system.Logger(cfg, os.Stderr)
	if err := o.ledger.requireVerifyKey(cfg); err != nil {
		return err
	}
	st, keys, err := o.ledger.open(cfg, o.offline)
	if err != nil {
		return err
	}
	defer st.Close()
	if o.manifest != "" {
		ev, err := importManifest(ctx, st, keys, o.manifest, log)
		if err != nil {
			return err
		}
		if event == "" {
			event = ev
		}
	}
	if event == "" {
		ms, err := st.Manifests(ctx)
		if err != nil {
			return err
		}
		if len(ms) != 1 {
			return fmt.Errorf("the ledger %s holds %d manifests: pass --manifest or --event", st.Path(), len(ms))
		}
		event = ms[0].EventID
	}
	mode := gate.ModeLedger
	if o.offline {
		mode = gate.ModeOffline
		log.Warn("OFFLINE SCANNER: this copy admits on its own; a ticket used at another scanner before the next sync "+
			"gets in again. When the LAN is back run: encore gate sync --from "+st.Path(), "db", st.Path())
	}
	zones := gate.Zones{}
	for _, z := range o.zones {
		if err := zones.ParseZone(z); err != nil {
			return fmt.Errorf("--zone: %w", err)
		}
	}
	devices, err := gateDevices(cfg, log)
	if err != nil {
		return err
	}
	reg := system.Registry()
	g := &gate.Gate{Store: st, EventID: event, Metrics: gate.NewMetrics(reg), Log: log, Reentry: o.reentry, Zones: zones}
	srv := &gate.Server{Gate: g, Devices: devices, Mode: mode, Gatherer: reg, Log: log}
	bound, done, err := system.Serve(ctx, addr, srv.Handler())
	if err != nil {
		return err
	}
	if cfg.GateReportURL != "" {
		rep := &gate.Reporter{Store: st, EventID: event, Zones: zones, URL: strings.TrimRight(cfg.GateReportURL, "/"),
			Token: cfg.GateReportToken.Reveal(), Log: log}
		go rep.Run(ctx)
		log.Info("reporting scans to the organiser's door view", "api", cfg.GateReportURL)
	}
	log.Info("gate listening", "url", system.HTTPURL(bound.String()), "event", event, "ledger", st.Path(), "mode", mode,
		"reentry", o.reentry, "zones", zones.Names(), "scanner_app", system.HTTPURL(bound.String())+"/")
	return <-done
}

// devGateDevice is the scanner a development gate pairs by itself.
const devGateDevice = "dev"

// gateDevices are the scanners the gate accepts scans from:
// ENCORE_GATE_TOKENS, or in development one made now for device "dev",
// its token written to ENCORE_DATA_DIR/gate/dev.token (readable by this
// user only) rather than logged.
func gateDevices(cfg config.Config, log *slog.Logger) (*gate.Devices, error) {
	if cfg.GateTokens != "" {
		d, err := gate.ParseDevices(cfg.GateTokens.Reveal())
		if err != nil {
			return nil, fmt.Errorf("ENCORE_GATE_TOKENS: %w", err)
		}
		return d, nil
	}
	if !cfg.Development() {
		return nil, fmt.Errorf("encore gate refuses to run with ENCORE_ENV=%s without ENCORE_GATE_TOKENS: anyone on the "+
			"venue network could burn tickets; make a pair per scanner with encore gate token DEVICE", cfg.Env)
	}
	token := gate.NewDeviceToken()
	path := system.DataPath(cfg, "gate", devGateDevice+".token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write the development scanner's token: %w", err)
	}
	log.Info("development scanner paired: send its token as Authorization: Bearer", "device", devGateDevice, "token_file", path)
	return gate.ParseDevices(devGateDevice + ":" + token)
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

func runGateImport(ctx context.Context, cfg config.Config, l ledgerOptions, file string) error {
	if err := l.requireVerifyKey(cfg); err != nil {
		return err
	}
	st, keys, err := l.open(cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	m, err := manifest.Open(data, keys, time.Now())
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	res, err := st.Import(ctx, m, time.Now())
	if err != nil {
		return err
	}
	fmt.Printf("imported %s manifest for %s into %s: version %d (was %d), %d tickets listed, %d revoked\n",
		res.Kind, res.EventID, st.Path(), res.Version, res.FromVersion, res.Tickets, res.Revoked)
	return nil
}

func runGateSync(ctx context.Context, cfg config.Config, l ledgerOptions, from string) error {
	ledger, keys, err := l.open(cfg, false)
	if err != nil {
		return err
	}
	defer ledger.Close()
	local, err := gate.OpenStore(from, keys.Encryption, gate.StoreOptions{Synchronous: l.sync})
	if err != nil {
		return err
	}
	defer local.Close()
	rep, err := gate.Sync(ctx, ledger, local, time.Now())
	if err != nil {
		return err
	}
	fmt.Printf("synced %s into %s: %d entries pushed, %d already there, %d pulled back\n",
		from, ledger.Path(), rep.Pushed, rep.AlreadyThere, rep.Pulled)
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

func runGateStatus(ctx context.Context, cfg config.Config, l ledgerOptions) error {
	st, _, err := l.open(cfg, false)
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

func newGateTokenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "token <device>",
		Short: "Make a scanner's device token for ENCORE_GATE_TOKENS",
		Long: `Prints a fresh device:token pair for one scanner. Append it to the gate's
ENCORE_GATE_TOKENS (comma-separated) and give the token to that scanner,
which sends it as Authorization: Bearer on every POST /v1/scan. Remove the
pair to revoke the scanner.`,
		Example: `  encore gate token north-1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pair := args[0] + ":" + gate.NewDeviceToken()
			if _, err := gate.ParseDevices(pair); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), pair)
			return nil
		},
	}
}
