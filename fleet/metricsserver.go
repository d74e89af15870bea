package fleet

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"net"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	kwokclient "sigs.k8s.io/kwok/pkg/client/clientset/versioned"
	"sigs.k8s.io/yaml"

	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// metrics-server on the fleet. kwokctl runs it as a local process (the
// metrics-server component, built from its pinned module); kwok serves
// each fake node's /metrics/resource from the pods' emulated usage
// (Usage); each node's annotation tells metrics-server where that is.
const (
	// AnnotationResourceMetricsPath is metrics-server's per-node override
	// of the kubelet's /metrics/resource path.
	AnnotationResourceMetricsPath = "metrics.k8s.io/resource-metrics-path"
	// MetricsResourceName names the kwok Metric with the resource metrics.
	MetricsResourceName = "ghostfleet-metrics-resource"
	// MetricsAPIService is the APIService metrics-server answers.
	MetricsAPIService = "v1beta1.metrics.k8s.io"
)

var (
	//go:embed metricsserver/metrics-resource.yaml
	metricsResourceYAML []byte
	//go:embed metricsserver/apiservice.yaml
	apiServiceYAML []byte
)

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// ResourceMetricsPath is where kwok serves node's resource metrics.
func ResourceMetricsPath(node string) string {
	return "/metrics/nodes/" + node + "/metrics/resource"
}

// MetricsResource is the kwok Metric with the kubelet's resource metrics
// per node (metricsserver/metrics-resource.yaml).
func MetricsResource() (*v1alpha1.Metric, error) {
	var m v1alpha1.Metric
	if err := yaml.UnmarshalStrict(metricsResourceYAML, &m); err != nil {
		return nil, fmt.Errorf("metricsserver/metrics-resource.yaml: %w", err)
	}
	return &m, nil
}

// MetricsAPIObjects are the Service and APIService that route
// metrics.k8s.io to a metrics-server listening on 127.0.0.1:port
// (metricsserver/apiservice.yaml).
func MetricsAPIObjects(port int) ([]*unstructured.Unstructured, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("metrics-server port %d is out of range: allowed are 1-65535", port)
	}
	text := bytes.ReplaceAll(apiServiceYAML, []byte("{{PORT}}"), []byte(strconv.Itoa(port)))
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(text, []byte("\n---\n")) {
		data, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("metricsserver/apiservice.yaml: %w", err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("metricsserver/apiservice.yaml: %w", err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// InstallMetricsServer gives the fleet called name what its metrics-server
// needs besides the process kwokctl runs: the emulated usage, the resource
// metrics per node, and the metrics.k8s.io APIService; it then waits until
// the apiserver reaches metrics-server.
func InstallMetricsServer(ctx context.Context, name string, report progress.Func) error {
	conf, err := fleetConfig(ctx, name)
	if err != nil {
		return err
	}
	port := int(conf.Options.MetricsServerPort)
	cfg, err := Own(name).RESTConfig()
	if err != nil {
		return err
	}
	kc, err := kwokclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := ensureMetricsServer(ctx, name, port, report); err != nil {
		return err
	}
	done := progress.Step(report, "metrics-server", fmt.Sprintf("connecting metrics-server (127.0.0.1:%d) as metrics.k8s.io, with emulated CPU and memory usage", port), 20*time.Second)
	defer done()
	if err := InstallUsage(ctx, kc); err != nil {
		return err
	}
	m, err := MetricsResource()
	if err != nil {
		return err
	}
	if err := applyMetric(ctx, kc, m); err != nil {
		return err
	}
	objs, err := MetricsAPIObjects(port)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := applyUnstructured(ctx, dc, obj); err != nil {
			return err
		}
	}
	var last string
	err = poll(ctx, 2*time.Minute, func() (bool, error) {
		obj, err := dc.Resource(apiServiceGVR).Get(ctx, MetricsAPIService, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ok, msg := apiServiceAvailable(obj)
		last = msg
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("metrics-server did not become available as %s: %w (last: %s; its log: kwokctl --name %s logs metrics-server)", MetricsAPIService, err, last, name)
	}
	return nil
}

// ensureMetricsServer waits for the fleet's metrics-server to listen on
// 127.0.0.1:port and starts it again if it has exited. metrics-server
// reads the apiserver's extension-apiserver-authentication ConfigMap when
// it starts and exits if the apiserver does not answer; kwokctl starts it
// beside the apiserver, and on a loaded machine the apiserver is often
// not answering yet (the process is also gone after a crash or a kill).
// Call it once the apiserver's /readyz is ok.
func ensureMetricsServer(ctx context.Context, name string, port int, report progress.Func) error {
	addr := net.JoinHostPort(BindAddress, strconv.Itoa(port))
	exited := false
	err := poll(ctx, time.Minute, func() (bool, error) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			return true, c.Close()
		}
		exited = !componentAlive(name, binaries.MetricsServer)
		return exited, nil
	})
	if err != nil {
		return fmt.Errorf("metrics-server runs but does not listen on %s: %w (its log: %s)", addr, err, componentLog(name, binaries.MetricsServer))
	}
	if !exited {
		return nil
	}
	report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("metrics-server had exited (its log's last line: %s): starting it again", lastLogLine(name, binaries.MetricsServer))})
	_, err = RestartComponent(ctx, name, binaries.MetricsServer, time.Minute)
	return err
}

// apiServiceAvailable reads an APIService's Available condition.
func apiServiceAvailable(obj *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Available" {
			return m["status"] == "True", fmt.Sprintf("Available=%v %v: %v", m["status"], m["reason"], m["message"])
		}
	}
	return false, "no Available condition yet"
}

// applyUnstructured creates obj or replaces what has its name. The
// resource is the lower-case plural of its kind, which holds for the
// Service and APIService applied here.
func applyUnstructured(ctx context.Context, dc dynamic.Interface, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	return applyAs(ctx, dc, schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: lowerPlural(gvk.Kind)}, obj)
}

// applyAs creates obj as resource gvr or replaces what has its name.
func applyAs(ctx context.Context, dc dynamic.Interface, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	var ri dynamic.ResourceInterface = dc.Resource(gvr)
	if ns := obj.GetNamespace(); ns != "" {
		ri = dc.Resource(gvr).Namespace(ns)
	}
	_, err := ri.Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var cur *unstructured.Unstructured
		if cur, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{}); err == nil {
			obj.SetResourceVersion(cur.GetResourceVersion())
			_, err = ri.Update(ctx, obj, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("installing %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	return nil
}

func lowerPlural(kind string) string {
	return string(bytes.ToLower([]byte(kind))) + "s"
}
