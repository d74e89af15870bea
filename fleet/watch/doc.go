// Package watch keeps node and pod informers and turns what they hold into
// FleetView snapshots, sent on a channel, for the console's map and
// allocation panes.
package watch
