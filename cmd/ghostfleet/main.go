// Command ghostfleet simulates a GPU Kubernetes fleet and measures its
// control plane.
package main

import (
	"os"

	"github.com/ghostfleet/ghostfleet/cmd/ghostfleet/app"
)

func main() {
	os.Exit(app.Main(app.StdStreams(), os.Args[1:]))
}
