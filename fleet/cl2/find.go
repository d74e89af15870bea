package cl2

import (
	"fmt"
	"os"
	"os/exec"
)

// EnvBinary names the clusterloader binary to run.
const EnvBinary = "GHOSTFLEET_CL2"

// BinaryNames are looked up on PATH, in this order.
var BinaryNames = []string{"clusterloader", "clusterloader2"}

// BuildHelp says how to get a binary. CL2 is not served by the Go module
// proxy, so GhostFleet can neither vendor nor fetch it.
const BuildHelp = `ClusterLoader2 is not on the Go module proxy, so GhostFleet cannot fetch it.
Build it once from a perf-tests checkout:

  git clone https://github.com/kubernetes/perf-tests
  cd perf-tests/clusterloader2
  go build -o clusterloader ./cmd
  export GHOSTFLEET_CL2=$PWD/clusterloader

or put clusterloader on PATH, or pass --binary PATH.`

// ErrNoBinary is returned by Find when no binary is configured or on PATH;
// its text ends with the build instructions (the console shows it on key b).
var ErrNoBinary error = noBinary{}

type noBinary struct{}

func (noBinary) Error() string {
	return "no ClusterLoader2 binary: $" + EnvBinary + " is unset and neither clusterloader nor clusterloader2 is on PATH\n\n" + BuildHelp
}

// Source says where Find found the binary.
type Source string

// Where a binary can come from, strongest first.
const (
	SourceFlag Source = "--binary"
	SourceEnv  Source = "$" + EnvBinary
	SourcePath Source = "PATH"
)

// Find returns the clusterloader binary to run: flag (--binary) when set,
// else $GHOSTFLEET_CL2, else clusterloader or clusterloader2 on PATH. An
// explicit flag wins over the environment as kubectl's flags do; an
// explicit flag or variable that names no executable is an error, never
// a silent fall-through to PATH.
func Find(flag string) (string, Source, error) {
	if flag != "" {
		return flag, SourceFlag, checkExecutable(string(SourceFlag), flag)
	}
	if env := os.Getenv(EnvBinary); env != "" {
		return env, SourceEnv, checkExecutable(string(SourceEnv), env)
	}
	for _, name := range BinaryNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, SourcePath, nil
		}
	}
	return "", "", ErrNoBinary
}

func checkExecutable(what, path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("%s %s: no such file; build clusterloader first:\n\n%s", what, path, BuildHelp)
	case fi.IsDir():
		return fmt.Errorf("%s %s is a folder, not the clusterloader binary", what, path)
	case fi.Mode()&0o111 == 0:
		return fmt.Errorf("%s %s is not executable (chmod +x it)", what, path)
	}
	return nil
}
