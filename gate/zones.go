package gate

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Zones are the areas of a venue with doors of their own (a VIP lounge, a
// standing pit), each the sections whose tickets may pass its doors. A
// scanner set to a zone refuses every other ticket with reason wrong_zone;
// a scanner in no zone (the main doors) admits every ticket of the event.
// A ticket still enters the venue once: the zone says which doors it may
// use, not a second entry.
type Zones map[string][]string

var zoneNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)

// ParseZone reads one --zone value, "vip=sec_1,sec_2", and adds it. A zone
// named twice, or with no sections, is an error: a typo must not open a door
// to everyone or to no one.
func (z Zones) ParseZone(value string) error {
	name, list, ok := strings.Cut(value, "=")
	name = strings.TrimSpace(name)
	if !ok || !zoneNamePattern.MatchString(name) {
		return fmt.Errorf("zone %q: want name=section,section (the name letters, digits, '_', '-', '.', at most 32)", value)
	}
	if _, dup := z[name]; dup {
		return fmt.Errorf("zone %q given twice", name)
	}
	var sections []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(sections, s) {
			sections = append(sections, s)
		}
	}
	if len(sections) == 0 {
		return fmt.Errorf("zone %q lists no sections", name)
	}
	z[name] = sections
	return nil
}

// Has says whether the gate knows the zone.
func (z Zones) Has(name string) bool {
	_, ok := z[name]
	return ok
}

// Admits says whether a ticket of section may pass a door of zone.
func (z Zones) Admits(zone, section string) bool {
	return slices.Contains(z[zone], section)
}

// Names lists the zones in order.
func (z Zones) Names() []string {
	out := make([]string, 0, len(z))
	for n := range z {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
