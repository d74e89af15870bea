// Package progress carries what long-running fleet work reports while it
// runs, so the CLI and the console render the same events.
package progress

import "time"

// Kind says what an Event marks.
type Kind int

const (
	// Start opens a step; Estimate, when set, is how long it usually takes.
	Start Kind = iota
	// Update reports Done of Total within the open step.
	Update
	// Finish closes the step named by Step.
	Finish
	// Info is a one-off message that belongs to no step.
	Info
	// Warn is a one-off message the user should read.
	Warn
)

// Event is one report from running work.
type Event struct {
	Kind     Kind
	Step     string
	Message  string
	Done     int
	Total    int
	Estimate time.Duration
	Elapsed  time.Duration // set on Finish
}

// Func receives events. It must not block for long: work calls it inline.
type Func func(Event)

// Discard drops every event.
func Discard(Event) {}

// Step reports the start of a step and returns a function that reports
// its end with the elapsed time.
func Step(report Func, step, message string, estimate time.Duration) func() {
	start := time.Now()
	report(Event{Kind: Start, Step: step, Message: message, Estimate: estimate})
	return func() {
		report(Event{Kind: Finish, Step: step, Message: message, Elapsed: time.Since(start)})
	}
}

// ToChannel returns a Func that sends events on ch, for a consumer in
// another goroutine (the console turns them into messages). When ch is
// full, Update events are dropped — a later one supersedes them — while
// every other kind waits for room, so starts, ends and warnings are never
// lost.
func ToChannel(ch chan<- Event) Func {
	return func(e Event) {
		if e.Kind == Update {
			select {
			case ch <- e:
			default:
			}
			return
		}
		ch <- e
	}
}
