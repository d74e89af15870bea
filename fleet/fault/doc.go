// Package fault injects the failures of a GPU cluster into GhostFleet's
// fleet — GPU Xid errors, NVLink and RoCE links down, nodes whose kubelet
// stops, containers exiting with a code after a delay and jitter — by
// marking nodes and pods for the kwok stages that play them, and clears
// them again.
package fault
