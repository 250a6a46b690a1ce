// Package hotels is the hotel side of Encore: search by destination, dates
// and guests on the browse plane (read-only pool, a short local cache), the
// overbooking limit a walk risk allows, and walks (guests of an overbooked
// night moved to another property, refunded and told). Holds of stays are
// the holds package's; the room-night inventory is store/stays.go's.
package hotels
