package app

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// autoscaleFlags are up's node autoscaling flags.
type autoscaleFlags struct {
	autoscaler       string
	nodePools        []string
	maxNodes         int
	consolidateAfter time.Duration
}

func (a *autoscaleFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&a.autoscaler, "autoscaler", "", "node autoscaler to run: karpenter (its kwok provider, built from its pinned module on first use; adds GPU nodes for pending pods and removes idle ones)")
	fs.StringSliceVar(&a.nodePools, "nodepools", nil, "with --autoscaler: GPU profiles Karpenter may add nodes of, one NodePool each (default: --gpu-profile); one of "+strings.Join(fleet.GPUProfileNames(), ", "))
	fs.IntVar(&a.maxNodes, "autoscale-max-nodes", fleet.DefaultAutoscaleMaxNodes, "with --autoscaler: the most nodes each NodePool may have")
	fs.DurationVar(&a.consolidateAfter, "consolidate-after", fleet.DefaultConsolidateAfter, "with --autoscaler: how long a node stays empty or underused before Karpenter removes it")
}

// specs checks the flags, before anything is built: none without
// --autoscaler.
func (a *autoscaleFlags) specs(gpu fleet.GPUProfile) ([]fleet.NodePoolSpec, error) {
	if err := fleet.CheckAutoscaler(a.autoscaler); err != nil {
		return nil, err
	}
	if a.autoscaler == "" {
		if len(a.nodePools) > 0 {
			return nil, errNeedsAutoscaler("--nodepools")
		}
		return nil, nil
	}
	profiles := a.nodePools
	if len(profiles) == 0 {
		profiles = []string{gpu.Name}
	}
	return fleet.NodePoolSpecs(profiles, a.maxNodes, a.consolidateAfter)
}

type errNeedsAutoscaler string

func (e errNeedsAutoscaler) Error() string {
	return string(e) + " needs --autoscaler karpenter"
}
