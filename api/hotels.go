package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/store"
)

// maxGuestsPerRoom bounds the guests a search asks a room to sleep.
const maxGuestsPerRoom = 20

// DecodeHotelQuery validates GET /v1/hotels/search's parameters: dest (a
// city, venue or property ID), checkin and checkout (YYYY-MM-DD, at most
// store.MaxStayNights apart) and guests per room (default 1).
func DecodeHotelQuery(dest, checkin, checkout, guests string) (hotels.Query, []FieldError) {
	q := hotels.Query{Dest: strings.TrimSpace(dest), Guests: 1}
	var errs []FieldError
	switch {
	case q.Dest == "":
		errs = append(errs, FieldError{"dest", "required: a city, venue or property"})
	case len(q.Dest) > 200 || !storableText(q.Dest):
		errs = append(errs, FieldError{"dest", "UTF-8 text without NUL, at most 200 characters"})
	}
	in, err1 := time.Parse(time.DateOnly, checkin)
	out, err2 := time.Parse(time.DateOnly, checkout)
	switch {
	case err1 != nil:
		errs = append(errs, FieldError{"checkin", "required: a date, YYYY-MM-DD"})
	case err2 != nil:
		errs = append(errs, FieldError{"checkout", "required: a date, YYYY-MM-DD"})
	case !out.After(in):
		errs = append(errs, FieldError{"checkout", "must be after checkin"})
	case out.Sub(in) > store.MaxStayNights*24*time.Hour:
		errs = append(errs, FieldError{"checkout", fmt.Sprintf("at most %d nights", store.MaxStayNights)})
	}
	q.Checkin, q.Checkout = in, out
	if guests != "" {
		n, err := strconv.Atoi(guests)
		if err != nil || n < 1 || n > maxGuestsPerRoom {
			errs = append(errs, FieldError{"guests", fmt.Sprintf("1 to %d", maxGuestsPerRoom)})
		}
		q.Guests = n
	}
	return q, errs
}

func (s *Server) searchHotels(c *gin.Context) {
	q, errs := DecodeHotelQuery(c.Query("dest"), c.Query("checkin"), c.Query("checkout"), c.Query("guests"))
	if len(errs) > 0 {
		writeProblem(c, Invalid(errs...))
		return
	}
	res, err := s.Browse.Hotels.Find(c.Request.Context(), q)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}
