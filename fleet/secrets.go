package fleet

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// restrictSecrets makes a cluster's private keys and kubeconfigs readable
// by their owner only, and their folders closed to others: kwokctl writes
// pki/*.key and kubeconfig.yaml with mode 0644. The kubeconfigs name the
// keys by path, so closing the folders alone would do; both are closed so
// that a later copy of a file keeps the right mode.
func restrictSecrets(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (path == dir || d.Name() == "pki"):
			return os.Chmod(path, 0o700)
		case d.IsDir():
			return fs.SkipDir // binaries, logs, etcd's data: nothing secret to open up
		case strings.HasSuffix(d.Name(), ".key") || strings.HasPrefix(d.Name(), "kubeconfig"):
			return os.Chmod(path, 0o600)
		}
		return nil
	})
}
