package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/manifest"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
)

// exportOptions are encore manifest export's flags.
type exportOptions struct {
	event   string
	out     string
	since   int64
	expires string // RFC 3339; empty: the show's start + 12h
}

func runManifestExport(ctx context.Context, cfg config.Config, o exportOptions) error {
	opt := manifest.ExportOptions{EventID: o.event, Since: o.since}
	if o.expires != "" {
		t, err := time.Parse(time.RFC3339, o.expires)
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
	if err := writeFileAtomic(o.out, data); err != nil {
		return err
	}
	fmt.Printf("%s manifest for %s: %d tickets, %d revoked, version %d, expires %s -> %s\n",
		h.Kind, h.EventID, h.TicketCount, h.RevokeCount, h.Version, h.ExpiresAt.Format(time.RFC3339), o.out)
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

func runManifestInspect(cfg config.Config, file string) error {
	data, err := os.ReadFile(file)
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
