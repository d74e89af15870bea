package fleet

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// GPUProfile describes one kind of GPU server, from its vendor's public
// specification, so fake nodes advertise what a real one would.
type GPUProfile struct {
	Name        string // key for --gpu-profile
	Description string
	Product     string // nvidia.com/gpu.product, as GPU feature discovery labels it
	Family      string // nvidia.com/gpu.family
	Machine     string // nvidia.com/gpu.machine
	// DeviceName is the GPU's name as NVML reports it, which NVIDIA's DRA
	// driver publishes as the productName attribute.
	DeviceName string
	// ComputeCapability is CUDA's compute capability (cudaComputeCapability).
	ComputeCapability string
	GPUs              int
	GPUMemoryMB       int // per GPU, nvidia.com/gpu.memory is in MiB
	CPU               string
	Memory            string
	Storage           string // ephemeral-storage: the internal NVMe cache
	Pods              int
	RDMANICs          int // compute-fabric ConnectX NICs, advertised as rdma/ib
	// NodesPerRack is how many servers share a rack (power-limited: four
	// DGX per rack in a SuperPOD).
	NodesPerRack int
	// NodesPerNVLinkDomain is how many servers share one NVLink domain: 1
	// for DGX (NVLink stays inside the box), 18 for a GB200 NVL72 rack.
	NodesPerNVLinkDomain int
}

// Resource names advertised by fake GPU nodes.
const (
	ResourceGPU  = "nvidia.com/gpu"
	ResourceRDMA = "rdma/ib"
)

// GPUProfiles are the built-in node profiles. Figures from NVIDIA's DGX
// data sheets: CPUs are hardware threads, memory is system RAM.
var GPUProfiles = []GPUProfile{
	{
		Name: "dgx-a100-80gb", Description: "NVIDIA DGX A100 640GB: 8x A100 SXM4 80GB, 2x AMD EPYC 7742, 2 TB RAM, 8x ConnectX-6 HDR 200Gb/s",
		Product: "NVIDIA-A100-SXM4-80GB", Family: "ampere", Machine: "DGX-A100",
		DeviceName: "NVIDIA A100-SXM4-80GB", ComputeCapability: "8.0",
		GPUs: 8, GPUMemoryMB: 81920, CPU: "256", Memory: "2Ti", Storage: "30Ti", Pods: 110, RDMANICs: 8,
		NodesPerRack: 4, NodesPerNVLinkDomain: 1,
	},
	{
		Name: "dgx-h100", Description: "NVIDIA DGX H100: 8x H100 SXM5 80GB, 2x Xeon Platinum 8480C, 2 TB RAM, 8x ConnectX-7 400Gb/s",
		Product: "NVIDIA-H100-80GB-HBM3", Family: "hopper", Machine: "DGX-H100",
		DeviceName: "NVIDIA H100 80GB HBM3", ComputeCapability: "9.0",
		GPUs: 8, GPUMemoryMB: 81559, CPU: "224", Memory: "2Ti", Storage: "30Ti", Pods: 110, RDMANICs: 8,
		NodesPerRack: 4, NodesPerNVLinkDomain: 1,
	},
	{
		Name: "dgx-b200", Description: "NVIDIA DGX B200: 8x B200 180GB, 2x Xeon Platinum 8570, 2 TB RAM, 8x ConnectX-7 400Gb/s",
		Product: "NVIDIA-B200", Family: "blackwell", Machine: "DGX-B200",
		DeviceName: "NVIDIA B200", ComputeCapability: "10.0",
		GPUs: 8, GPUMemoryMB: 183359, CPU: "224", Memory: "2Ti", Storage: "30Ti", Pods: 110, RDMANICs: 8,
		NodesPerRack: 4, NodesPerNVLinkDomain: 1,
	},
	{
		Name: "gb200-nvl72", Description: "NVIDIA GB200 NVL72 compute tray: 4x B200 186GB, 2x Grace (144 cores), 960 GB LPDDR5X; 18 trays share one NVLink domain",
		Product: "NVIDIA-GB200", Family: "blackwell", Machine: "GB200-NVL72",
		DeviceName: "NVIDIA GB200", ComputeCapability: "10.0",
		GPUs: 4, GPUMemoryMB: 189471, CPU: "144", Memory: "960Gi", Storage: "15Ti", Pods: 110, RDMANICs: 4,
		NodesPerRack: 18, NodesPerNVLinkDomain: 18,
	},
}

// DefaultGPUProfile is used when --gpu-profile is not given.
const DefaultGPUProfile = "dgx-h100"

// LookupGPUProfile returns the named profile or an error listing the names.
func LookupGPUProfile(name string) (GPUProfile, error) {
	for _, p := range GPUProfiles {
		if p.Name == name {
			return p, nil
		}
	}
	return GPUProfile{}, fmt.Errorf("unknown GPU profile %q: allowed are %s", name, strings.Join(GPUProfileNames(), ", "))
}

// GPUProfileNames lists the profile names, sorted.
func GPUProfileNames() []string {
	names := make([]string, len(GPUProfiles))
	for i, p := range GPUProfiles {
		names[i] = p.Name
	}
	sort.Strings(names)
	return names
}

// validate checks the profile's quantities parse; used by tests and at
// registration of user-supplied profiles.
func (p GPUProfile) validate() error {
	for _, q := range []string{p.CPU, p.Memory, p.Storage} {
		if _, err := resource.ParseQuantity(q); err != nil {
			return fmt.Errorf("profile %s: %w", p.Name, err)
		}
	}
	if p.GPUs <= 0 || p.NodesPerRack <= 0 || p.NodesPerNVLinkDomain <= 0 {
		return fmt.Errorf("profile %s: GPUs, NodesPerRack and NodesPerNVLinkDomain must be positive", p.Name)
	}
	return nil
}
