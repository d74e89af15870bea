package cl2

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// namespacePrefix is CL2's automanaged namespace prefix: test- and six
// random characters (pkg/test: "test-%s", RandomDNS1123String(6)).
var namespacePrefix = regexp.MustCompile(`^test-[a-z0-9]{6}$`)

// DeleteNamespaces deletes the namespaces CL2 created with prefix (its
// AutomanagedNamespacePrefix): CL2 deletes them only when a test ends,
// so an interrupted run leaves them, with their pods holding GPUs. It
// does not wait for them to go. Anything but a CL2 prefix is refused.
func DeleteNamespaces(ctx context.Context, cs kubernetes.Interface, prefix string) ([]string, error) {
	if !namespacePrefix.MatchString(prefix) {
		return nil, fmt.Errorf("%q is not a ClusterLoader2 namespace prefix (test-xxxxxx): refusing to delete by it", prefix)
	}
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	var deleted []string
	for _, ns := range list.Items {
		rest, ok := strings.CutPrefix(ns.Name, prefix+"-")
		if !ok || strings.Trim(rest, "0123456789") != "" || rest == "" {
			continue
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
		}
		deleted = append(deleted, ns.Name)
	}
	return deleted, nil
}
