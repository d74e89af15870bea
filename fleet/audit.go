package fleet

import (
	"os"
	"path/filepath"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/yaml"
)

// auditPolicyName is where Up writes a profile's audit policy in the
// cluster's folder for kwokctl, which copies it to its own audit.yaml.
const auditPolicyName = "ghostfleet-audit-policy.yaml"

// writeAuditPolicy writes the profile's audit policy where kwokctl reads
// it when it creates the cluster called name, and returns the path; ""
// when the profile has none.
func writeAuditPolicy(name string, p ComponentProfile) (string, error) {
	policy := p.APIServer.AuditPolicy
	if policy == nil {
		return "", nil
	}
	data, err := auditPolicyYAML(policy)
	if err != nil {
		return "", err
	}
	dir := clusterWorkdir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, auditPolicyName)
	return path, os.WriteFile(path, data, 0o644)
}

// AuditLogPath is where the fleet called name keeps kube-apiserver's audit
// log, when its profile has an audit policy (kwokctl's logs/audit.log);
// "" when it keeps none.
func AuditLogPath(name string) string {
	path := filepath.Join(clusterWorkdir(name), "logs", "audit.log")
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}

// auditPolicyYAML is policy as the file kube-apiserver reads.
func auditPolicyYAML(policy *auditv1.Policy) ([]byte, error) {
	out := policy.DeepCopy()
	out.APIVersion, out.Kind = auditv1.SchemeGroupVersion.String(), "Policy"
	return yaml.Marshal(out)
}
