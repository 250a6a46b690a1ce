package organiser

import (
	"context"
	"regexp"
	"strings"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// OrgFields are the organisation's settings as PATCH /v1/admin/org sends
// them: only the fields to change.
type OrgFields struct {
	LegalName        *string `json:"legal_name,omitempty"`
	Address          *string `json:"address,omitempty"`
	VATID            *string `json:"vat_id,omitempty"`
	TaxRateBp        *int    `json:"tax_rate_bp,omitempty"`
	PricesIncludeTax *bool   `json:"prices_include_tax,omitempty"`
	InvoicePrefix    *string `json:"invoice_prefix,omitempty"`
}

var prefixPattern = regexp.MustCompile(`^[A-Z0-9]{1,12}$`)

// OrgSettings reads the scope's organisation's legal and tax settings.
func (s *Service) OrgSettings(ctx context.Context, scope venues.Scope) (store.OrgSettings, error) {
	if err := scope.Check(); err != nil {
		return store.OrgSettings{}, err
	}
	if scope.Org == "" {
		return store.OrgSettings{}, venues.Invalid("org", "name the organisation (?org=)")
	}
	return s.store.Orgs.OrgSettings(ctx, scope.Org)
}

// SaveOrgSettings changes the fields f sets. A tax change applies to holds
// taken from then on; issued invoices keep the data they were issued with.
func (s *Service) SaveOrgSettings(ctx context.Context, scope venues.Scope, f OrgFields) (store.OrgSettings, error) {
	o, err := s.OrgSettings(ctx, scope)
	if err != nil {
		return o, err
	}
	var e venues.FieldErrors
	for _, t := range []struct {
		name string
		dst  *string
		src  *string
		max  int
	}{{"legal_name", &o.LegalName, f.LegalName, 200}, {"address", &o.Address, f.Address, 500}, {"vat_id", &o.VATID, f.VATID, 40}} {
		if t.src == nil {
			continue
		}
		if v := strings.TrimSpace(*t.src); len(v) > t.max {
			e.Add(t.name, "at most %d characters", t.max)
		} else {
			*t.dst = v
		}
	}
	venues.SetWithin(&e, "tax_rate_bp", &o.TaxRateBp, f.TaxRateBp, 0, 10000, "basis points from 0 to 10000 (2100 is 21 %)")
	if f.PricesIncludeTax != nil {
		o.PricesIncludeTax = *f.PricesIncludeTax
	}
	if f.InvoicePrefix != nil {
		if p := strings.TrimSpace(*f.InvoicePrefix); !prefixPattern.MatchString(p) {
			e.Add("invoice_prefix", "1 to 12 capital letters or digits, such as INV")
		} else {
			o.InvoicePrefix = p
		}
	}
	if err := e.Err(); err != nil {
		return o, err
	}
	return o, s.store.Orgs.SaveOrgSettings(ctx, o)
}
