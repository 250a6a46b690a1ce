package invoices

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
)

// Service hands invoices to those who may read them: the fan who booked,
// support staff and admins, and the organiser whose organisation sold.
type Service struct {
	Store *store.Store
}

// PDFFor renders booking id's invoice (or its credit note) for who. Anyone
// else is told there is no such booking (store.ErrNotFound), as for a
// missing one. An invoice the saga has not issued yet (a booking paid
// before invoices existed) is issued now; a booking that has none is
// store.ErrNoInvoice.
func (s *Service) PDFFor(ctx context.Context, who session.Identity, id uuid.UUID, kind store.InvoiceKind) ([]byte, store.Invoice, error) {
	user, org, err := s.Store.Bookings.InvoiceParties(ctx, id)
	if err != nil {
		return nil, store.Invoice{}, err
	}
	if !(user == who.UserID || who.Has(session.Support) || who.Has(session.Admin) ||
		(who.Has(session.Organiser) && org != "" && who.Org == org)) {
		return nil, store.Invoice{}, store.ErrNotFound
	}
	v, err := s.Store.Bookings.Invoice(ctx, id, kind)
	if errors.Is(err, store.ErrNoInvoice) && kind == store.KindInvoice {
		v, err = s.Store.Bookings.IssueInvoice(ctx, id)
	}
	if err != nil {
		return nil, store.Invoice{}, err
	}
	b, err := PDF(v)
	return b, v, err
}
