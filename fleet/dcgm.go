package fleet

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	kwokclient "sigs.k8s.io/kwok/pkg/client/clientset/versioned"
)

// DCGM metric emulation. kwok serves the series of a Metric resource per
// node under its path, and lists every node's path for Prometheus's HTTP
// service discovery (the kwok-controller-metrics-discovery job kwokctl
// writes into Prometheus's configuration), so each fake node is scraped
// like a node running NVIDIA's dcgm-exporter.
const (
	// DCGMMetricName names the Metric resource; its path holds the node.
	DCGMMetricName = "ghostfleet-dcgm"
	DCGMPath       = "/metrics/nodes/{nodeName}/metrics/dcgm"
)

// DCGM series, as dcgm-exporter names them.
const (
	DCGMGPUUtil = "DCGM_FI_DEV_GPU_UTIL" // percent
	DCGMFBUsed  = "DCGM_FI_DEV_FB_USED"  // MiB
	DCGMFBFree  = "DCGM_FI_DEV_FB_FREE"  // MiB
)

// DCGMMetric is the Metric resource with dcgm-exporter's series for gpus
// GPUs a node: GPU i is busy while the node's running pods hold more than
// i GPUs (the device plugin hands out the lowest indices first, as far as
// a dashboard can tell), then its utilisation is 90–100% and its frame
// buffer 90% used; idle GPUs show 0% and an empty frame buffer.
func DCGMMetric(gpus int) *v1alpha1.Metric {
	used := `node.Usage("` + ResourceGPU + `")`
	memory := `double(node.metadata.labels["nvidia.com/gpu.memory"])`
	var ms []v1alpha1.MetricConfig
	for i := 0; i < gpus; i++ {
		busy := fmt.Sprintf("%s > %d.0", used, i)
		labels := []v1alpha1.MetricLabel{
			{Name: "gpu", Value: fmt.Sprintf("%q", fmt.Sprint(i))},
			{Name: "UUID", Value: fmt.Sprintf(`"GPU-" + node.metadata.uid + "-%d"`, i)},
			{Name: "modelName", Value: `node.metadata.labels["nvidia.com/gpu.product"]`},
			{Name: "Hostname", Value: "node.metadata.name"},
		}
		ms = append(ms,
			v1alpha1.MetricConfig{Name: DCGMGPUUtil, Help: "GPU utilization (in %).", Kind: v1alpha1.KindGauge, Dimension: v1alpha1.DimensionNode,
				Labels: labels, Value: fmt.Sprintf("%s ? 90.0 + Rand() * 10.0 : 0.0", busy)},
			v1alpha1.MetricConfig{Name: DCGMFBUsed, Help: "Framebuffer memory used (in MiB).", Kind: v1alpha1.KindGauge, Dimension: v1alpha1.DimensionNode,
				Labels: labels, Value: fmt.Sprintf("%s ? %s * 0.9 : 0.0", busy, memory)},
			v1alpha1.MetricConfig{Name: DCGMFBFree, Help: "Framebuffer memory free (in MiB).", Kind: v1alpha1.KindGauge, Dimension: v1alpha1.DimensionNode,
				Labels: labels, Value: fmt.Sprintf("%s ? %s * 0.1 : %s", busy, memory, memory)},
		)
	}
	m := &v1alpha1.Metric{
		ObjectMeta: metav1.ObjectMeta{Name: DCGMMetricName},
		Spec:       v1alpha1.MetricSpec{Path: DCGMPath, Metrics: ms},
	}
	m.APIVersion, m.Kind = v1alpha1.GroupVersion.String(), v1alpha1.MetricKind
	return m
}

// InstallDCGM creates (or replaces) the usage (Usage: the GPUs the
// running pods of a node hold, which the series derive from) and the DCGM
// Metric resource for nodes of gpus GPUs.
func InstallDCGM(ctx context.Context, cs kwokclient.Interface, gpus int) error {
	if err := InstallUsage(ctx, cs); err != nil {
		return err
	}
	m := DCGMMetric(gpus)
	return applyMetric(ctx, cs, m)
}

// applyMetric creates the kwok Metric resource m, or replaces it.
func applyMetric(ctx context.Context, cs kwokclient.Interface, m *v1alpha1.Metric) error {
	_, err := cs.KwokV1alpha1().Metrics().Create(ctx, m, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var cur *v1alpha1.Metric
		if cur, err = cs.KwokV1alpha1().Metrics().Get(ctx, m.Name, metav1.GetOptions{}); err == nil {
			m.ResourceVersion = cur.ResourceVersion
			_, err = cs.KwokV1alpha1().Metrics().Update(ctx, m, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("installing kwok Metric %s: %w", m.Name, err)
	}
	return nil
}
