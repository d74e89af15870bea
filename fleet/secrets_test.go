package fleet

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRestrictSecrets(t *testing.T) {
	dir := t.TempDir()
	files := map[string]os.FileMode{ // as kwokctl leaves them → as they must end
		"kubeconfig.yaml":    0o600,
		"kubeconfig":         0o600,
		"pki/admin.key":      0o600,
		"pki/ca.key":         0o600,
		"pki/ca.crt":         0o644, // a certificate is public
		"kwok.yaml":          0o644,
		"logs/etcd.log":      0o644,
		"bin/kube-apiserver": 0o755,
	}
	for name := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if filepath.Base(filepath.Dir(name)) == "bin" {
			mode = 0o755
		}
		if err := os.WriteFile(path, nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := restrictSecrets(dir); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", name, got, want)
		}
	}
	for name, want := range map[string]os.FileMode{".": 0o700, "pki": 0o700, "logs": 0o755} {
		st, _ := os.Stat(filepath.Join(dir, name))
		if got := st.Mode().Perm(); got != want {
			t.Errorf("folder %s: mode %o, want %o", name, got, want)
		}
	}
}
