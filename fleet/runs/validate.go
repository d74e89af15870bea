package runs

import "github.com/ghostfleet/ghostfleet/fleet/workload"

// The workloads' own checks, plus the workload namespace's name: checked
// here, before any cluster is asked, so the flags and the console's forms
// get the same one line for "--namespace Bad_NS" as for a bad count.

// Check checks what needs no cluster (see workload.LoadOptions.Check).
func (o *LoadOptions) Check() error {
	if err := workload.CheckNamespace(o.Namespace); err != nil {
		return err
	}
	return o.LoadOptions.Check()
}

// Validate checks the churn and fills its defaults (see
// workload.ChurnOptions.Validate).
func (o *ChurnOptions) Validate() error {
	if err := workload.CheckNamespace(o.Namespace); err != nil {
		return err
	}
	return o.ChurnOptions.Validate()
}

// Check checks what needs no cluster (see workload.TrainOptions.Check).
func (o *TrainOptions) Check() error {
	if err := workload.CheckNamespace(o.Namespace); err != nil {
		return err
	}
	if err := o.checkGang(); err != nil {
		return err
	}
	return o.TrainOptions.Check()
}

// Check checks what needs no cluster (see workload.BinpackOptions.Check).
func (o *BinpackOptions) Check() error {
	if err := workload.CheckNamespace(o.Namespace); err != nil {
		return err
	}
	return o.BinpackOptions.Check()
}
