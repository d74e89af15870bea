package fleet

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
)

// MetricsAvailable says whether cs's cluster serves metrics.k8s.io (its
// APIService is Available), with why not in words a user can act on.
// It reads through the apiserver's REST client, so it needs no metrics
// clientset; a clientset without one (a fake) has no metrics API.
func MetricsAvailable(ctx context.Context, cs kubernetes.Interface) error {
	rc := cs.Discovery().RESTClient()
	if rc == nil {
		return fmt.Errorf("no metrics API: the client cannot reach the apiserver's REST API")
	}
	body, err := rc.Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/"+MetricsAPIService).
		SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("no metrics API: APIService %s: %v", MetricsAPIService, err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(body); err != nil {
		return fmt.Errorf("no metrics API: APIService %s: %v", MetricsAPIService, err)
	}
	if ok, msg := apiServiceAvailable(obj); !ok {
		return fmt.Errorf("no metrics API: APIService %s is not available (%s)", MetricsAPIService, msg)
	}
	return nil
}

// PodUsage is the CPU and memory the pods use, as metrics.k8s.io reports
// it (metrics-server's last two scrapes).
type PodUsage struct {
	Pods        int   `json:"pods"`
	CPUMilli    int64 `json:"cpuMilli"`
	MemoryBytes int64 `json:"memoryBytes"`
}

// podMetricsList is the part of a PodMetricsList read here.
type podMetricsList struct {
	Items []struct {
		Containers []struct {
			Usage map[string]string `json:"usage"`
		} `json:"containers"`
	} `json:"items"`
}

// ReadPodUsage sums every pod's usage from metrics.k8s.io (as JSON; the
// API also speaks protobuf, which would need its clientset).
func ReadPodUsage(ctx context.Context, cs kubernetes.Interface) (PodUsage, error) {
	rc := cs.Discovery().RESTClient()
	if rc == nil {
		return PodUsage{}, fmt.Errorf("no metrics API")
	}
	body, err := rc.Get().AbsPath("/apis/metrics.k8s.io/v1beta1/pods").SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return PodUsage{}, err
	}
	var list podMetricsList
	if err := json.Unmarshal(body, &list); err != nil {
		return PodUsage{}, err
	}
	return sumPodUsage(list), nil
}

func sumPodUsage(list podMetricsList) PodUsage {
	u := PodUsage{Pods: len(list.Items)}
	for _, p := range list.Items {
		for _, c := range p.Containers {
			if q, err := resource.ParseQuantity(c.Usage["cpu"]); err == nil {
				u.CPUMilli += q.MilliValue()
			}
			if q, err := resource.ParseQuantity(c.Usage["memory"]); err == nil {
				u.MemoryBytes += q.Value()
			}
		}
	}
	return u
}
