package hotels

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/encore-tickets/encore/internal/csvsafe"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

// InventoryRequest is PUT /v1/admin/properties/{property_id}/inventory:
// one room type's nights from From to To, both included (YYYY-MM-DD; a
// year in one call is fine), each field that is set applied to every
// night, the others kept. Nights not yet on sale are created, and need
// allotment and rate. Weekdays (ISO, 1 Monday to 7 Sunday) limits the
// change to those days of the week.
type InventoryRequest struct {
	RoomType      string       `json:"room_type"`
	From          string       `json:"from"`
	To            string       `json:"to"`
	Allotment     *int         `json:"allotment,omitempty"`
	OverbookLimit *int         `json:"overbook_limit,omitempty"`
	Rate          *money.Money `json:"rate,omitempty"`
	StopSell      *bool        `json:"stop_sell,omitempty"`
	Weekdays      []int        `json:"weekdays,omitempty"`
}

// DecodeInventoryRequest reads an InventoryRequest from JSON.
func DecodeInventoryRequest(r io.Reader) (InventoryRequest, error) {
	var req InventoryRequest
	return req, decodeJSON(r, &req)
}

// InventoryResult is what an inventory change did.
type InventoryResult struct {
	PropertyID string `json:"property_id"`
	RoomType   string `json:"room_type"`
	From       string `json:"from"`
	To         string `json:"to"`
	// Nights changed: Updated were on sale, Created are new.
	Updated  int    `json:"updated"`
	Created  int    `json:"created"`
	Currency string `json:"currency,omitempty"`
}

// DateRange reads from and to (YYYY-MM-DD, to not before from, at most
// store.MaxInventoryNights nights) as dates at UTC midnight.
func DateRange(from, to string) (time.Time, time.Time, error) {
	var e venues.FieldErrors
	f, err1 := time.Parse(time.DateOnly, from)
	t, err2 := time.Parse(time.DateOnly, to)
	switch {
	case err1 != nil:
		e.Add("from", "required: the first night, YYYY-MM-DD")
	case err2 != nil:
		e.Add("to", "required: the last night, YYYY-MM-DD")
	case t.Before(f):
		e.Add("to", "must not be before from")
	case t.Sub(f) >= store.MaxInventoryNights*24*time.Hour:
		e.Add("to", "at most %d nights from from", store.MaxInventoryNights)
	}
	return f, t, e.Err()
}

// SetInventory applies req to the property's nights, all or none (see
// store.Hotels.SetInventory): a night that would end up with more rooms
// held and sold than allotment plus limit refuses the whole change
// (*store.InventoryConflictError, naming every such night). Rates changed
// here are what later holds pay; held and paid stays keep theirs.
func (s *Service) SetInventory(ctx context.Context, scope venues.Scope, propertyID string, req InventoryRequest) (InventoryResult, error) {
	if _, err := s.Get(ctx, scope, propertyID); err != nil {
		return InventoryResult{}, err
	}
	from, to, err := DateRange(req.From, req.To)
	var e venues.FieldErrors
	if err != nil {
		e = append(e, err.(*venues.ValidationError).Errors...)
	}
	if !roomTypeID.MatchString(req.RoomType) {
		e.Add("room_type", "required: one of the property's room types")
	}
	if req.Allotment == nil && req.OverbookLimit == nil && req.Rate == nil && req.StopSell == nil {
		e.Add("allotment", "name at least one of allotment, overbook_limit, rate and stop_sell")
	}
	for _, n := range []struct {
		name string
		v    *int
	}{{"allotment", req.Allotment}, {"overbook_limit", req.OverbookLimit}} {
		if n.v != nil && (*n.v < 0 || *n.v > MaxRooms) {
			e.Add(n.name, "0 to %d rooms", MaxRooms)
		}
	}
	if req.Rate != nil {
		if req.Rate.Amount < 0 || req.Rate.Amount > MaxRate {
			e.Add("rate.amount", "0 to %d, in minor units of the currency", MaxRate)
		}
		if !currencyISO.MatchString(req.Rate.Currency) {
			e.Add("rate.currency", "an ISO 4217 code such as EUR")
		}
	}
	for i, d := range req.Weekdays {
		if d < 1 || d > 7 || slices.Contains(req.Weekdays[:i], d) {
			e.Add(fmt.Sprintf("weekdays[%d]", i), "ISO days of the week, 1 (Monday) to 7 (Sunday), each once")
		}
	}
	if err := e.Err(); err != nil {
		return InventoryResult{}, err
	}
	res, err := s.Store.Hotels.SetInventory(ctx, store.InventoryChange{PropertyID: propertyID, RoomType: req.RoomType,
		From: from, To: to, Allotment: req.Allotment, OverbookLimit: req.OverbookLimit, Rate: req.Rate, StopSell: req.StopSell,
		Weekdays: req.Weekdays})
	if err != nil {
		return InventoryResult{}, err
	}
	return InventoryResult{PropertyID: propertyID, RoomType: req.RoomType, From: req.From, To: req.To, Updated: res.Updated,
		Created: res.Created, Currency: res.Currency}, nil
}

// Inventory is GET /v1/admin/properties/{property_id}/inventory: every
// room type's nights in the range.
type Inventory struct {
	PropertyID string           `json:"property_id"`
	Currency   string           `json:"currency,omitempty"`
	From       string           `json:"from"`
	To         string           `json:"to"`
	RoomTypes  []store.RoomType `json:"room_types"`
	Nights     []InventoryNight `json:"nights"`
}

// InventoryNight is one night of one room type: its allotment, overbooking
// limit, the rooms sold and held (pending holds, expired ones until they
// are given back), what is left to sell, the rate and whether it is
// stop-sold.
type InventoryNight struct {
	Night         string      `json:"night"`
	RoomType      string      `json:"room_type"`
	Allotment     int         `json:"allotment"`
	OverbookLimit int         `json:"overbook_limit"`
	Sold          int         `json:"sold"`
	Held          int         `json:"held"`
	Available     int         `json:"available"`
	Rate          money.Money `json:"rate"`
	StopSell      bool        `json:"stop_sell"`
}

func inventoryNight(rn store.RoomNight, currency string) InventoryNight {
	avail := max(rn.Allotment+rn.OverbookLimit-rn.Held-rn.Sold, 0)
	if rn.StopSell {
		avail = 0
	}
	return InventoryNight{Night: rn.Night.Format(time.DateOnly), RoomType: rn.RoomType, Allotment: rn.Allotment,
		OverbookLimit: rn.OverbookLimit, Sold: rn.Sold, Held: rn.Held, Available: avail,
		Rate: money.Money{Amount: rn.Price, Currency: currency}, StopSell: rn.StopSell}
}

// Inventory reads the property's nights from from to to (both included),
// by night then room type.
func (s *Service) Inventory(ctx context.Context, scope venues.Scope, propertyID, from, to string) (Inventory, error) {
	h, err := s.Get(ctx, scope, propertyID)
	if err != nil {
		return Inventory{}, err
	}
	f, t, err := DateRange(from, to)
	if err != nil {
		return Inventory{}, err
	}
	rns, err := s.Store.Hotels.Inventory(ctx, propertyID, f, t)
	if err != nil {
		return Inventory{}, err
	}
	out := Inventory{PropertyID: propertyID, Currency: h.Currency, From: from, To: to, RoomTypes: h.RoomTypes,
		Nights: make([]InventoryNight, len(rns))}
	for i, rn := range rns {
		out.Nights[i] = inventoryNight(rn, h.Currency)
	}
	return out, nil
}

// Arrivals is GET /v1/admin/properties/{property_id}/arrivals: the paid
// stays whose guests arrive on Date (the property's own calendar day).
type Arrivals struct {
	PropertyID  string        `json:"property_id"`
	Date        string        `json:"date"`
	CheckInTime string        `json:"check_in_time"`
	Arrivals    []ArrivalView `json:"arrivals"`
}

// ArrivalView is one arriving stay: the booking and its voucher's
// confirmation number, who booked, the rooms and the nights.
type ArrivalView struct {
	BookingID    string `json:"booking_id"`
	Confirmation string `json:"confirmation"`
	Guest        string `json:"guest"`
	RoomType     string `json:"room_type"`
	RoomTypeName string `json:"room_type_name"`
	Rooms        int    `json:"rooms"`
	Nights       int    `json:"nights"`
	Checkin      string `json:"checkin"`
	Checkout     string `json:"checkout"`
	// WalkedFrom is the property a guest walked in from.
	WalkedFrom string `json:"walked_from,omitempty"`
}

// Arrivals lists the paid stays arriving at the property on date
// (YYYY-MM-DD).
func (s *Service) Arrivals(ctx context.Context, scope venues.Scope, propertyID, date string) (Arrivals, error) {
	h, err := s.Get(ctx, scope, propertyID)
	if err != nil {
		return Arrivals{}, err
	}
	day, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return Arrivals{}, venues.Invalid("date", "required: the day of arrival, YYYY-MM-DD")
	}
	as, err := s.Store.Hotels.Arrivals(ctx, propertyID, day)
	if err != nil {
		return Arrivals{}, err
	}
	out := Arrivals{PropertyID: propertyID, Date: date, CheckInTime: h.CheckInTime, Arrivals: make([]ArrivalView, len(as))}
	for i, a := range as {
		out.Arrivals[i] = ArrivalView{BookingID: a.BookingID, Confirmation: a.Confirmation, Guest: a.Guest, RoomType: a.RoomType,
			RoomTypeName: a.RoomTypeName, Rooms: a.Rooms, Nights: a.Nights, Checkin: a.Checkin.Format(time.DateOnly),
			Checkout: a.Checkout.Format(time.DateOnly), WalkedFrom: a.WalkedFrom}
	}
	return out, nil
}

// WriteCSV writes the arrivals as CSV through internal/csvsafe: a guest's
// address or a room type's name that looks like a formula stays text in
// the front desk's spreadsheet; rooms and nights are numbers.
func (a Arrivals) WriteCSV(w io.Writer) error {
	cw := csvsafe.NewWriter(w)
	if err := cw.Header("date", "booking_id", "confirmation", "guest", "room_type", "room_type_name", "rooms", "nights",
		"checkin", "checkout", "walked_from"); err != nil {
		return err
	}
	for _, r := range a.Arrivals {
		if err := cw.Write(csvsafe.Text(a.Date), csvsafe.Text(r.BookingID), csvsafe.Text(r.Confirmation), csvsafe.Text(r.Guest),
			csvsafe.Text(r.RoomType), csvsafe.Text(r.RoomTypeName), csvsafe.Int(r.Rooms), csvsafe.Int(r.Nights),
			csvsafe.Text(r.Checkin), csvsafe.Text(r.Checkout), csvsafe.Text(r.WalkedFrom)); err != nil {
			return err
		}
	}
	return cw.Flush()
}

// WalkPreview is GET /v1/admin/properties/{property_id}/walks/preview:
// the night's counters per room type and the walks a walk of Rooms
// bookings would make now (those made already included, Done).
type WalkPreview struct {
	PropertyID string `json:"property_id"`
	Night      string `json:"night"`
	Rooms      int    `json:"rooms"`
	// Overbooked is how many rooms are sold past the allotments that
	// night, over every room type: the walks a full house may need.
	Overbooked int              `json:"overbooked"`
	RoomNights []InventoryNight `json:"room_nights"`
	Walks      []WalkView       `json:"walks"`
}

// WalkView is one walk as a preview or a walk answers it.
type WalkView struct {
	BookingID    string      `json:"booking_id"`
	Guest        string      `json:"guest"`
	Outcome      string      `json:"outcome"`
	FromRoomType string      `json:"from_room_type"`
	ToProperty   string      `json:"to_property,omitempty"`
	ToRoomType   string      `json:"to_room_type,omitempty"`
	Rooms        int         `json:"rooms"`
	Refund       money.Money `json:"refund"`
	Compensation money.Money `json:"compensation"`
	// Done: the walk was made already (a later walk keeps it).
	Done bool `json:"done"`
}

// PreviewWalk is who a walk of rooms bookings off the night would move and
// where, without moving anyone (store.Hotels.PreviewWalk runs the walk's
// own transaction and rolls it back).
func (s *Service) PreviewWalk(ctx context.Context, scope venues.Scope, propertyID, night string, rooms int) (WalkPreview, error) {
	h, err := s.Get(ctx, scope, propertyID)
	if err != nil {
		return WalkPreview{}, err
	}
	day, err := time.Parse(time.DateOnly, night)
	if err != nil {
		return WalkPreview{}, venues.Invalid("night", "required: the night to walk guests off, YYYY-MM-DD")
	}
	if err := (WalkRequest{Rooms: rooms}).Validate(); err != nil {
		return WalkPreview{}, err
	}
	rns, err := s.Store.Hotels.Inventory(ctx, propertyID, day, day)
	if err != nil {
		return WalkPreview{}, err
	}
	before, err := s.Store.Hotels.WalkedOff(ctx, propertyID, day)
	if err != nil {
		return WalkPreview{}, err
	}
	comp := s.CompensationNights
	if comp <= 0 {
		comp = 1
	}
	walks, err := s.Store.Hotels.PreviewWalk(ctx, propertyID, day, rooms, comp)
	if err != nil {
		return WalkPreview{}, err
	}
	out := WalkPreview{PropertyID: propertyID, Night: night, Rooms: rooms, RoomNights: make([]InventoryNight, len(rns)),
		Walks: make([]WalkView, len(walks))}
	for i, rn := range rns {
		out.RoomNights[i] = inventoryNight(rn, h.Currency)
		out.Overbooked += max(rn.Sold-rn.Allotment, 0)
	}
	for i, w := range walks {
		out.Walks[i] = WalkViewOf(w)
		out.Walks[i].Done = before[w.ReservationID.String()]
	}
	return out, nil
}

// WalkViewOf is a walk as the API shows it.
func WalkViewOf(w store.Walk) WalkView {
	return WalkView{BookingID: w.ReservationID.String(), Guest: w.UserID, Outcome: string(w.Outcome), FromRoomType: w.FromRoomType,
		ToProperty: w.ToProperty, ToRoomType: w.ToRoomType, Rooms: w.Rooms, Refund: money.Money{Amount: w.Refund, Currency: w.Currency},
		Compensation: money.Money{Amount: w.Compensation, Currency: w.Currency}, Done: true}
}
