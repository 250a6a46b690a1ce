package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/gate"
)

// addGateDoorFlags declares encore gate's door rules: --reentry and --zone.
func addGateDoorFlags(f *pflag.FlagSet, o *gateOptions) {
	f.BoolVar(&o.reentry, "reentry", false, "the event allows re-entry: a ticket scanned out may come back in (default: a second scan in is refused)")
	f.StringArrayVar(&o.zones, "zone", nil, "a zone with doors of its own, name=section,section (repeatable): a scanner set to it admits only those sections' tickets")
}

// gateDeviceCommands are encore gate's scanner commands: pair, devices and
// revoke, on the ledger the gate serves from.
func gateDeviceCommands(ledger *ledgerOptions) []*cobra.Command {
	return []*cobra.Command{newGatePairCmd(ledger), newGateDevicesCmd(ledger), newGateRevokeCmd(ledger)}
}

func newGatePairCmd(ledger *ledgerOptions) *cobra.Command {
	var name string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "pair --name <scanner>",
		Short: "Print a pairing code for a scanner (single use, 10 minutes)",
		Long: `Prints a short pairing code for one scanner. Open the gate's address on the
scanner (the scanner app at /), type the code, and the scanner gets a device
token of its own; the gate keeps only its SHA-256. The code is single use and
good for ten minutes; it is written into the ledger, so a gate already running
on the same file accepts it at once. encore gate revoke takes a scanner back.`,
		Example: `  encore gate pair --name "North 3"`,
		Args:    cobra.NoArgs,
		RunE: secured("gate", func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return runGatePair(cmd, cfg, *ledger, name, ttl)
		}),
	}
	cmd.Flags().StringVar(&name, "name", "", "the scanner's name as staff see it, e.g. \"North 3\" (required)")
	cmd.Flags().DurationVar(&ttl, "ttl", gate.PairingTTL, "how long the code is good for")
	required(cmd, "name")
	return cmd
}

func runGatePair(cmd *cobra.Command, cfg config.Config, l ledgerOptions, name string, ttl time.Duration) error {
	if ttl <= 0 || ttl > time.Hour {
		return fmt.Errorf("--ttl: between 1s and 1h")
	}
	st, _, err := l.open(cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	code, exp, err := st.NewPairingCode(cmd.Context(), name, time.Now(), ttl)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "pairing code for %q: %s\n", name, gate.FormatPairingCode(code))
	fmt.Fprintf(cmd.OutOrStdout(), "open the gate's address on the scanner and type it before %s (single use)\n",
		exp.Local().Format("15:04:05"))
	return nil
}

func newGateDevicesCmd(ledger *ledgerOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "devices",
		Short: "List the paired scanners",
		Long: `Lists the scanners paired with encore gate pair: ID, name, when paired and,
for a revoked one, when it was revoked. Scanners of ENCORE_GATE_TOKENS are not
in the ledger and are not listed.`,
		Args: cobra.NoArgs,
		RunE: secured("gate", func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return runGateDevices(cmd.Context(), cmd, cfg, *ledger)
		}),
	}
}

func runGateDevices(ctx context.Context, cmd *cobra.Command, cfg config.Config, l ledgerOptions) error {
	st, _, err := l.open(cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	list, err := st.Devices(ctx)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if len(list) == 0 {
		fmt.Fprintln(out, "no paired scanners (encore gate pair --name NAME pairs one)")
		return nil
	}
	for _, d := range list {
		state := "live"
		if d.RevokedAt != nil {
			state = "revoked " + d.RevokedAt.Local().Format(time.RFC3339)
		}
		fmt.Fprintf(out, "%s\t%q\tpaired %s\t%s\n", d.ID, d.Name, d.PairedAt.Local().Format(time.RFC3339), state)
	}
	return nil
}

func newGateRevokeCmd(ledger *ledgerOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke <device>",
		Short: "Revoke a paired scanner: its next request is refused",
		Long: `Revokes a scanner paired with encore gate pair, named by its ID (encore gate
devices lists them) or by its name when one live scanner has it. Gates read
the ledger on every request, so its next scan is refused with 401.`,
		Example: `  encore gate revoke scn_k3m9x2pqrt`,
		Args:    cobra.ExactArgs(1),
		RunE: secured("gate", func(cmd *cobra.Command, args []string, cfg config.Config) error {
			st, _, err := ledger.open(cfg, false)
			if err != nil {
				return err
			}
			defer st.Close()
			d, err := st.RevokeDevice(cmd.Context(), args[0], time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (%q) at %s\n", d.ID, d.Name, d.RevokedAt.Local().Format(time.RFC3339))
			return nil
		}),
	}
}
