package holds

import (
	"encoding/json"
	"time"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
)

// View is a hold as the public contract shows it.
type View struct {
	HoldID    string      `json:"hold_id"`
	EventID   string      `json:"event_id"`
	Status    string      `json:"status"`
	SeatIDs   []string    `json:"seat_ids"`
	SectionID string      `json:"section_id,omitempty"`
	Quantity  int         `json:"quantity"`
	ExpiresAt time.Time   `json:"expires_at"`
	Total     money.Money `json:"total"`
	PromoCode string      `json:"promo_code,omitempty"`
	Items     []ViewItem  `json:"items"`
}

// ViewItem is one frozen line of a hold.
type ViewItem struct {
	SeatID    string      `json:"seat_id,omitempty"`
	SectionID string      `json:"section_id"`
	Quantity  int         `json:"quantity"`
	Price     money.Money `json:"price"`
	BasePrice int64       `json:"base_price"`
	SurgeBps  int         `json:"surge_bps"`
	Discount  int64       `json:"discount"`
}

// NewView shapes h for the contract.
func NewView(h store.Hold) View {
	v := View{HoldID: h.ID.String(), EventID: h.EventID, Status: string(h.Status), SeatIDs: h.SeatIDs(),
		ExpiresAt: h.ExpiresAt.UTC(), Total: h.Total, PromoCode: h.PromoCode, Items: []ViewItem{}}
	for _, it := range h.Items {
		v.Quantity += it.Quantity
		if it.SeatID == "" {
			v.SectionID = it.SectionID
		}
		v.Items = append(v.Items, ViewItem{SeatID: it.SeatID, SectionID: it.SectionID, Quantity: it.Quantity,
			Price: it.Price, BasePrice: it.Base, SurgeBps: it.SurgeBps, Discount: it.Discount})
	}
	return v
}

// Encode renders h as the contract's JSON body. First answers, idempotent
// replays and reads all go through it, so an answer rendered again from the
// database is the same bytes as the first.
func Encode(h store.Hold) ([]byte, error) {
	return json.Marshal(NewView(h))
}
