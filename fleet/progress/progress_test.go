package progress

import (
	"testing"
	"time"
)

func TestToChannelDropsOnlyUpdates(t *testing.T) {
	ch := make(chan Event, 1)
	report := ToChannel(ch)
	report(Event{Kind: Update, Done: 1})
	report(Event{Kind: Update, Done: 2}) // full: dropped, not blocking
	if e := <-ch; e.Done != 1 {
		t.Errorf("first update %+v", e)
	}
	done := Step(report, "s", "step", time.Second)
	if e := <-ch; e.Kind != Start || e.Estimate != time.Second {
		t.Errorf("start %+v", e)
	}
	go done()
	if e := <-ch; e.Kind != Finish || e.Step != "s" {
		t.Errorf("finish %+v", e)
	}
}
