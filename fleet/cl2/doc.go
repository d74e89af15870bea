// Package cl2 runs ClusterLoader2, the upstream scalability benchmark,
// against a fleet: it finds the clusterloader binary users build from
// perf-tests, runs it with the flags a KWOK fleet needs, streams its
// progress and folds its report into a GhostFleet run record.
package cl2
