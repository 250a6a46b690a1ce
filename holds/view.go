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
	// Fees are the service fees inside Total, Tax the tax inside it (at
	// rate_bp), both frozen at hold time.
	Fees      money.Money `json:"fees"`
	Tax       ViewTax     `json:"tax"`
	PromoCode string      `json:"promo_code,omitempty"`
	Items     []ViewItem  `json:"items"`
	// Stays are the hotel stays of a package or hotel-only hold; omitted
	// when there are none, so a seat hold renders as it always did.
	Stays []ViewStay `json:"stays,omitempty"`
}

// ViewStay is one stay of a hold, its nights' prices frozen.
type ViewStay struct {
	PropertyID string      `json:"property_id"`
	RoomType   string      `json:"room_type"`
	Checkin    string      `json:"checkin"`
	Checkout   string      `json:"checkout"`
	Rooms      int         `json:"rooms"`
	Nights     []ViewNight `json:"nights"`
	Total      money.Money `json:"total"`
}

// ViewNight is one night of a stay and its price per room.
type ViewNight struct {
	Date  string      `json:"date"`
	Price money.Money `json:"price"`
}

// ViewTax is the tax of a hold or booking.
type ViewTax struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	RateBp   int    `json:"rate_bp"`
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
	// TicketType is the line's type; Fee its service fee (apart from
	// Price); ListingID the resale listing it buys.
	TicketType string `json:"ticket_type,omitempty"`
	Fee        int64  `json:"fee"`
	ListingID  string `json:"listing_id,omitempty"`
}

// NewView shapes h for the contract.
func NewView(h store.Hold) View {
	v := View{HoldID: h.ID.String(), EventID: h.EventID, Status: string(h.Status), SeatIDs: h.SeatIDs(),
		ExpiresAt: h.ExpiresAt.UTC(), Total: h.Total, PromoCode: h.PromoCode, Items: []ViewItem{},
		Fees: money.Money{Amount: h.Fees, Currency: h.Total.Currency},
		Tax:  ViewTax{Amount: h.Tax, Currency: h.Total.Currency, RateBp: h.TaxRateBp}}
	for _, it := range h.Items {
		v.Quantity += it.Quantity
		if it.SeatID == "" {
			v.SectionID = it.SectionID
		}
		v.Items = append(v.Items, ViewItem{SeatID: it.SeatID, SectionID: it.SectionID, Quantity: it.Quantity,
			Price: it.Price, BasePrice: it.Base, SurgeBps: it.SurgeBps, Discount: it.Discount, TicketType: it.TicketType, Fee: it.Fee,
			ListingID: it.ListingID})
	}
	for _, st := range h.Stays {
		vs := ViewStay{PropertyID: st.PropertyID, RoomType: st.RoomType, Checkin: st.Checkin.Format(time.DateOnly),
			Checkout: st.Checkout.Format(time.DateOnly), Rooms: st.Rooms, Total: st.Total, Nights: []ViewNight{}}
		for _, n := range st.Nights {
			vs.Nights = append(vs.Nights, ViewNight{Date: n.Night.Format(time.DateOnly), Price: n.Price})
		}
		v.Stays = append(v.Stays, vs)
	}
	return v
}

// Encode renders h as the contract's JSON body. First answers, idempotent
// replays and reads all go through it, so an answer rendered again from the
// database is the same bytes as the first.
func Encode(h store.Hold) ([]byte, error) {
	return json.Marshal(NewView(h))
}
