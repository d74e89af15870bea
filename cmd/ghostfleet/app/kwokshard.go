package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

func newKwokShardCommand(g *globals) *cobra.Command {
	var o runs.KwokShardOptions
	var bins binaryFlags
	cmd := &cobra.Command{
		Use:   "kwok-shard --kubeconfig F --shard I --of N",
		Short: "Run one shard of an attached cluster's kwok controllers on this machine",
		Long: fmt.Sprintf(`Run shard I of N of an attached cluster's kwok controllers here, in the
foreground, until Ctrl-C: the fake nodes of its 32-node blocks (block b
belongs to shard b mod N, counted from 1 here) get their heartbeats,
leases and pod lifecycles from this machine instead of the one that
attached. It is how the fake fleet's kwok work spreads past one machine.

On the machine that drives the cluster:

  ghostfleet attach --kubeconfig K --kwok-shards N --remote-shards R

runs shards 1 to N-R there and prints the kwok-shard command of each of
the others; on each other machine, with a copy of the kubeconfig:

  ghostfleet kwok-shard --kubeconfig K --shard I --of N

kwok-shard refuses a cluster that is not attached, an --of that is not
its --kwok-shards and a shard that runs on the attaching machine, so that
no node is ever managed twice. It writes nothing itself: only the kwok
controller writes, for its own nodes. status on the attaching machine
shows each remote shard by its nodes' leases. It stops by itself when the
cluster is detached. The controller's log and a copy of the kubeconfig
are under ~/.local/state/ghostfleet/attached/ (at most %d shards).`, fleet.MaxKwokShards),
		Example: `  ghostfleet kwok-shard --kubeconfig ~/.kube/big.yaml --context perf --shard 2 --of 2`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.kubeconfig == "" {
				return fmt.Errorf("kwok-shard needs --kubeconfig F: the attached cluster whose shard to run")
			}
			o.Binaries = bins.binaries()
			p := g.streams.printer(false)
			defer p.Close()
			return runs.KwokShard(cmd.Context(), g.env(p, ""), o)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.Shard, "shard", 0, "which shard to run, 1 to --of (one the attaching machine left to kwok-shard)")
	fs.IntVar(&o.Of, "of", 0, "how many shards share the nodes: the cluster's attach --kwok-shards")
	_ = cmd.MarkFlagRequired("shard")
	_ = cmd.MarkFlagRequired("of")
	bins.add(fs)
	return cmd
}
