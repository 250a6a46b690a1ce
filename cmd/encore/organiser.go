package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// The organiser's commands: venues and events through the same services as
// the organiser routes of the API. The command line acts with the
// database's own authority: an admin, or the organiser --org names.

func newVenueCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "venue",
		Short: "Import a venue's layout (sections, rows, seats with x, y and category)",
		Long: `import reads a venue layout from a JSON file (the body of POST /v1/admin/venues:
name, city, timezone and layout) or a CSV file (columns section, kind, category,
row, seat, x, y; optional name and capacity; one line per seat, one line per
general-admission area with its capacity), validates all of it and writes it in
one transaction. Every error is listed with its JSON path or CSV line and
column; nothing is written then.`,
		Args: cobra.NoArgs,
		RunE: needCommand,
	}
	cmd.AddCommand(newVenueImportCmd())
	return cmd
}

// venueImportOptions are encore venue import's flags.
type venueImportOptions struct {
	file, name, city, timezone, org string
	categories                      []string
}

func newVenueImportCmd() *cobra.Command {
	var o venueImportOptions
	cmd := &cobra.Command{
		Use:   "import --file <layout.json|layout.csv>",
		Short: "Import a venue from a JSON or CSV layout file",
		Long: `Imports a venue from a JSON or CSV layout file (by extension) for the
organisation --org and prints its ID and seat count. For CSV, --name, --city
and --timezone say what the file cannot; for JSON they override the file's.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return runVenueImport(cmd.Context(), cfg, cmd.OutOrStdout(), o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.file, "file", "", "layout file, .json or .csv (required)")
	f.StringVar(&o.name, "name", "", "venue name (required for CSV)")
	f.StringVar(&o.city, "city", "", "venue city (required for CSV)")
	f.StringVar(&o.timezone, "timezone", "", "IANA time zone, such as Europe/Amsterdam (required for CSV)")
	f.StringVar(&o.org, "org", venues.DemoOrg, "organisation the venue belongs to")
	f.StringSliceVar(&o.categories, "categories", nil, "CSV: the only categories sections may use (default: any)")
	required(cmd, "file")
	return cmd
}

func runVenueImport(ctx context.Context, cfg config.Config, out io.Writer, o venueImportOptions) error {
	v, err := readVenueFile(o)
	if err != nil {
		return listed(err)
	}
	pool, done, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	start := time.Now()
	st := store.New(pool, store.Options{})
	scope := venues.Admin(o.org, actor())
	imp, err := venues.NewService(st).Import(ctx, scope, v)
	if err != nil {
		return listed(err)
	}
	if err := organiser.NewService(st).Audit(ctx, scope, o.org, "venue.create", imp.VenueID, "", nil, map[string]any{
		"venue_id": imp.VenueID, "name": v.Name, "city": v.City, "timezone": v.Timezone, "sections": imp.Sections, "seats": imp.Seats}); err != nil {
		return fmt.Errorf("venue %s imported, but its audit record was not written: %w", imp.VenueID, err)
	}
	fmt.Fprintf(out, "%s\t%d seats in %d sections, imported in %s\n", imp.VenueID, imp.Seats, imp.Sections,
		time.Since(start).Round(time.Millisecond))
	return nil
}

// readVenueFile parses the layout file by its extension, flags filling in
// (or overriding) the venue's name, city and time zone.
func readVenueFile(o venueImportOptions) (venues.Venue, error) {
	f, err := os.Open(o.file)
	if err != nil {
		return venues.Venue{}, err
	}
	defer f.Close()
	var v venues.Venue
	switch ext := strings.ToLower(filepath.Ext(o.file)); ext {
	case ".csv":
		return venues.ParseCSV(f, venues.CSVMeta{Name: o.name, City: o.city, Timezone: o.timezone, Categories: o.categories})
	case ".json":
		if o.name == "" && o.city == "" && o.timezone == "" {
			return venues.ParseJSON(f)
		}
		// Flags override the file's fields: parse, override, validate again.
		v, err = venues.ParseJSON(f)
		var verr *venues.ValidationError
		if err != nil && !errors.As(err, &verr) {
			return v, err
		}
	default:
		return venues.Venue{}, fmt.Errorf("--file: %q is neither .json nor .csv", ext)
	}
	for _, o := range []struct {
		dst *string
		v   string
	}{{&v.Name, o.name}, {&v.City, o.city}, {&v.Timezone, o.timezone}} {
		if o.v != "" {
			*o.dst = o.v
		}
	}
	return v, v.Validate()
}

// listed spells out every error of a validation error, one a line.
func listed(err error) error {
	var verr *venues.ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d errors, nothing written:", len(verr.Errors))
	for _, fe := range verr.Errors {
		fmt.Fprintf(&b, "\n  %s: %s", fe.Field, fe.Message)
	}
	return errors.New(b.String())
}

// actor names who acts in logs such as the seat block log.
func actor() string {
	if u := os.Getenv("USER"); u != "" {
		return "cli:" + u
	}
	return "cli"
}

// scopeFor is the scope of the command line: an admin, or the organiser of
// org when given.
func scopeFor(org string) venues.Scope {
	if org != "" {
		return venues.Organiser(org, actor())
	}
	return venues.Admin("", actor())
}

func newEventCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "event",
		Short: "Create, publish and block seats of an organiser's events",
		Long: `create drafts an event from a JSON file (the body of POST /v1/admin/events:
venue_id, title, starts_at, onsale_at, currency and prices per category
required), copying the venue's layout into its seats; publish shows it to fans
and puts it on sale from its on-sale time; block and unblock take seats out of
sale and back, with a reason kept in the seat block log.`,
		Args: cobra.NoArgs,
		RunE: needCommand,
	}
	cmd.AddCommand(newEventCreateCmd(), newEventPublishCmd(), newEventBlockCmd(true), newEventBlockCmd(false), newEventCancelCmd())
	return cmd
}

// withOrganiser opens the database and runs fn with the organiser service.
func withOrganiser(ctx context.Context, cfg config.Config, fn func(*organiser.Service) error) error {
	pool, done, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	return listed(fn(organiser.NewService(store.New(pool, store.Options{}))))
}

func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newEventCreateCmd() *cobra.Command {
	var file, org string
	cmd := &cobra.Command{
		Use:   "create --file <event.json>",
		Short: "Draft an event from a JSON file",
		Long: `Drafts an event from a JSON file and prints it (status DRAFT). Fans see it
once published.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			f, err := os.Open(file)
			if err != nil {
				return err
			}
			defer f.Close()
			fields, err := organiser.DecodeEventFields(f)
			if err != nil {
				return listed(err)
			}
			return withOrganiser(cmd.Context(), cfg, func(svc *organiser.Service) error {
				ev, err := svc.Create(cmd.Context(), scopeFor(org), fields)
				if err != nil {
					return err
				}
				if err := svc.Audit(cmd.Context(), scopeFor(org), ev.OrgID, "event.create", ev.EventID, "", nil, ev); err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), ev)
			})
		}),
	}
	cmd.Flags().StringVar(&file, "file", "", "event JSON file (required)")
	cmd.Flags().StringVar(&org, "org", "", "act as this organisation's organiser (default: as an admin)")
	required(cmd, "file")
	return cmd
}

func newEventPublishCmd() *cobra.Command {
	var org string
	cmd := &cobra.Command{
		Use:   "publish <event_id>",
		Short: "Publish a draft event to fans",
		Long: `Publishes a draft: fans find it, see its page and seat map, and can hold
seats from its on-sale time until its off-sale time. Prints the event.`,
		Args: cobra.ExactArgs(1),
		RunE: action(func(cmd *cobra.Command, args []string, cfg config.Config) error {
			return withOrganiser(cmd.Context(), cfg, func(svc *organiser.Service) error {
				before, err := svc.Get(cmd.Context(), scopeFor(org), args[0])
				if err != nil {
					return err
				}
				ev, err := svc.Publish(cmd.Context(), scopeFor(org), args[0])
				if err != nil {
					return err
				}
				if err := svc.Audit(cmd.Context(), scopeFor(org), ev.OrgID, "event.publish", ev.EventID, "",
					map[string]any{"status": before.Status}, map[string]any{"status": ev.Status}); err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), ev)
			})
		}),
	}
	cmd.Flags().StringVar(&org, "org", "", "act as this organisation's organiser (default: as an admin)")
	return cmd
}

func newEventBlockCmd(block bool) *cobra.Command {
	var org, reason string
	var seats []string
	name, short, long := "block", "Take seats out of sale, with a reason",
		`Blocks seats: they are never held or sold until unblocked. A held or sold
seat refuses the whole request. Prints the seats whose status changed.`
	if !block {
		name, short, long = "unblock", "Put blocked seats back on sale, with a reason",
			`Unblocks seats: they can be held again. A held or sold seat refuses the
whole request (its buyer owns it). Prints the seats whose status changed.`
	}
	cmd := &cobra.Command{
		Use:   name + " <event_id> --seats <id,id,...> --reason <why>",
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: action(func(cmd *cobra.Command, args []string, cfg config.Config) error {
			return withOrganiser(cmd.Context(), cfg, func(svc *organiser.Service) error {
				change, action := svc.Block, "seats.block"
				if !block {
					change, action = svc.Unblock, "seats.unblock"
				}
				ev, err := svc.Get(cmd.Context(), scopeFor(org), args[0])
				if err != nil {
					return err
				}
				res, err := change(cmd.Context(), scopeFor(org), args[0], organiser.SeatChange{SeatIDs: seats, Reason: reason})
				if err != nil {
					return err
				}
				if err := svc.Audit(cmd.Context(), scopeFor(org), ev.OrgID, action, ev.EventID, strings.TrimSpace(reason),
					map[string]any{"seat_ids": seats}, res); err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), res)
			})
		}),
	}
	cmd.Flags().StringSliceVar(&seats, "seats", nil, "seat IDs, comma-separated (required)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, kept in the seat block log (required)")
	cmd.Flags().StringVar(&org, "org", "", "act as this organisation's organiser (default: as an admin)")
	required(cmd, "seats", "reason")
	return cmd
}
