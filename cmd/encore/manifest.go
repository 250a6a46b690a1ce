package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/manifest"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
)

const manifestUsage = `usage:
  encore manifest export --event <event_id> --out <file> [--since <version>] [--expires <RFC 3339 time>]
  encore manifest inspect <file>

export writes the event's valid paid tickets with their QR secrets, encrypted
(ENCORE_MANIFEST_KEY) and signed (ENCORE_MANIFEST_SIGNING_SEED), for encore gate.
--since <version> writes a delta from an earlier export: tickets issued and
revoked since. inspect verifies a file's signature and prints its header.`

func runManifest(ctx context.Context, cfg config.Config, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, manifestUsage)
		return exitCode(2)
	}
	switch args[0] {
	case "export":
		return runManifestExport(ctx, cfg, args[1:])
	case "inspect":
		return runManifestInspect(cfg, args[1:])
	}
	fmt.Fprintln(os.Stderr, manifestUsage)
	return exitCode(2)
}

func runManifestExport(ctx context.Context, cfg config.Config, args []string) error {
	fs := flag.NewFlagSet("manifest export", flag.ContinueOnError)
	event := fs.String("event", "", "event ID (required)")
	out := fs.String("out", "", "file to write (required)")
	since := fs.Int64("since", 0, "version of the export the gate holds: write a delta from it")
	expires := fs.String("expires", "", "expiry, RFC 3339 (default: the show's start + 12h)")
	if err := fs.Parse(args); err != nil {
		return exitCode(2)
	}
	if *event == "" || *out == "" {
		fmt.Fprintln(os.Stderr, manifestUsage)
		return exitCode(2)
	}
	opt := manifest.ExportOptions{EventID: *event, Since: *since}
	if *expires != "" {
		t, err := time.Parse(time.RFC3339, *expires)
		if err != nil {
			return fmt.Errorf("--expires: %w", err)
		}
		opt.ExpiresAt = t
	}
	keys, err := manifest.KeysFromConfig(cfg)
	if err != nil {
		return err
	}
	kr, err := system.TicketKeyring(cfg)
	if err != nil {
		return err
	}
	pool, done, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	data, h, err := manifest.Export(ctx, store.New(pool, store.Options{}), kr, keys, opt)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(*out, data); err != nil {
		return err
	}
	fmt.Printf("%s manifest for %s: %d tickets, %d revoked, version %d, expires %s -> %s\n",
		h.Kind, h.EventID, h.TicketCount, h.RevokeCount, h.Version, h.ExpiresAt.Format(time.RFC3339), *out)
	fmt.Printf("next delta: encore manifest export --event %s --since %d --out <file>\n", h.EventID, h.Version)
	return nil
}

// writeFileAtomic writes data readable by the owner only, replacing path in
// one rename so a gate never reads half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".manifest-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func runManifestInspect(cfg config.Config, args []string) error {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, manifestUsage)
		return exitCode(2)
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	keys, err := gateKeys(cfg, "")
	if err != nil {
		return err
	}
	h, err := manifest.ReadHeader(data, keys.Verify)
	if err != nil {
		return err
	}
	fmt.Printf("signature  ok\nevent      %s\nkind       %s\nversion    %d\n", h.EventID, h.Kind, h.Version)
	if h.Kind == manifest.KindDelta {
		fmt.Printf("base       %d\n", h.BaseVersion)
	}
	fmt.Printf("created    %s\nexpires    %s\ntickets    %d\nrevoked    %d\nkey id     %s\n",
		h.CreatedAt.Format(time.RFC3339), h.ExpiresAt.Format(time.RFC3339), h.TicketCount, h.RevokeCount, h.KeyID)
	if ours := manifest.KeyID(keys.Encryption); ours != h.KeyID {
		return errors.New("this machine's ENCORE_MANIFEST_KEY is " + ours + ": a gate here could not open it")
	}
	return nil
}
