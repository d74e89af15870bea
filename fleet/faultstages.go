package fleet

// Fault markers. The stages that play the faults are in
// fleet/stages/fault-node.yaml and fault-pod.yaml. GhostFleet marks a node or pod with a fault by a label
// (fault.ghostfleet.io/<kind>=true) and annotations carrying the fault's
// parameters; kwok stages select on them and write the status a GPU
// health stack or a failing container would produce. The marker stays on
// the object for as long as the fault lasts, so `kubectl get nodes -l`
// finds every faulted node.
const (
	FaultPrefix = "fault.ghostfleet.io/"
	// FaultActive is the marker label's value while the fault holds.
	FaultActive = "true"
	// FaultCleared is a pod marker's value once the fault was cleared
	// before it fired: a stage then cancels what kwok had scheduled.
	FaultCleared = "cleared"

	// TaintGPUHealth is the taint a GPU health operator puts on a node whose
	// GPUs or fabric failed, so that no new GPU work lands there.
	TaintGPUHealth      = "nvidia.com/gpu-health"
	TaintGPUHealthValue = "unhealthy"
)

// Node fault kinds, and the pod ones.
const (
	FaultGPUXid      = "gpu-xid"
	FaultNVLink      = "nvlink"
	FaultRDMA        = "rdma"
	FaultNodeDown    = "node-down"
	FaultPodExit     = "pod-exit"
	FaultPodInitExit = "pod-init-exit"
)

// FaultLabel is the marker label of a fault kind.
func FaultLabel(kind string) string { return FaultPrefix + kind }

// FaultAnnotation is the annotation holding parameter param of a fault.
func FaultAnnotation(kind, param string) string { return FaultPrefix + kind + "." + param }

// ConditionFault describes a node fault that a GPU health stack reports as
// node conditions (NVIDIA's DCGM exporter / NPD health checks, the
// condition types of kwok's GPU demo).
type ConditionFault struct {
	Kind string
	// Condition is set True while the fault holds.
	Condition string
	// Extra is set True too when the fault's "extra" annotation is "true":
	// a double-bit ECC Xid is both an Xid and a DBE/MSBE problem.
	Extra string
	// Reason and Message are written unless the fault's annotations say
	// otherwise.
	Reason, Message string
	// Healthy is the reason written when the fault is cleared, NPD style.
	Healthy, HealthyMessage string
	// LowerGPUs withdraws one GPU from allocatable, as the device plugin
	// does when a GPU is marked unhealthy.
	LowerGPUs bool
}

// ConditionFaults are the node faults done with conditions. The stages in
// fleet/stages/fault-node.yaml write what these say (the package's tests
// play them).
var ConditionFaults = []ConditionFault{
	{Kind: FaultGPUXid, Condition: "GpuXidProblem", Extra: "GpuDbeMsbeProblem", Reason: "Xid79", Message: "Xid 79: GPU has fallen off the bus", Healthy: "NoGpuXidProblem", HealthyMessage: "no GPU Xid errors", LowerGPUs: true},
	{Kind: FaultNVLink, Condition: "NvLinkProblem", Reason: "NvLinkDown", Message: "NVLink inactive: a GPU's NVLink links are down (Xid 74)", Healthy: "NoNvLinkProblem", HealthyMessage: "all NVLink links are up"},
	{Kind: FaultRDMA, Condition: "RoCELinksProblem", Reason: "RoCELinkDown", Message: "RoCE link down: a compute-fabric NIC port lost its link", Healthy: "NoRoCELinksProblem", HealthyMessage: "all RoCE links are up"},
}

// LookupConditionFault returns the condition fault of kind.
func LookupConditionFault(kind string) (ConditionFault, bool) {
	for _, f := range ConditionFaults {
		if f.Kind == kind {
			return f, true
		}
	}
	return ConditionFault{}, false
}
