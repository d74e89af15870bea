package runs

import (
	"errors"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// A record whose profile's settings could not be read says so in its
// warnings, once, instead of the run warning before it starts.
func TestCompleteUnreadableProfile(t *testing.T) {
	s := session{env: Env{Target: fleet.Own("gf-unit")}, profile: "fast", settingsErr: errors.New("profile fast: permission denied")}
	var rec record.Record
	s.complete(&rec)
	if rec.Cluster != "gf-unit" || rec.Profile != "fast" || rec.ProfileSettings != "" || rec.Ended.IsZero() {
		t.Errorf("record %+v; want cluster gf-unit, profile fast, no settings, an end", rec)
	}
	if len(rec.Warnings) != 1 || !strings.Contains(rec.Warnings[0], "the record does not hold its profile's settings: profile fast: permission denied") {
		t.Errorf("warnings %q; want the one saying why the settings are missing", rec.Warnings)
	}
}
