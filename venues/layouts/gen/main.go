// Command gen writes the example layouts of package venues (go generate
// ./venues): layouts/encore-arena.json and layouts/club.csv.
package main

import (
	"log"
	"os"

	"github.com/encore-tickets/encore/venues"
)

func main() {
	arena, err := venues.EncodeJSON(venues.ArenaVenue())
	if err != nil {
		log.Fatal(err)
	}
	club, err := venues.EncodeCSV(venues.ClubVenue().Layout)
	if err != nil {
		log.Fatal(err)
	}
	for name, data := range map[string][]byte{venues.ArenaFile: arena, venues.ClubFile: club} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
