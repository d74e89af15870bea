// Package fleet is the simulated GPU cluster and what runs on it: the
// control plane's lifecycle through kwok's binary runtime, component
// profiles, GPU node profiles and fake nodes, and the fleet's status.
package fleet
