// Package state saves a fleet's whole cluster state (kwokctl's etcd
// snapshot) as a results/ run and restores it, so that an experiment can
// be repeated from the same starting point.
package state
