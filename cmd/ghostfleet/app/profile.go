package app

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// stagesName is what `profile show` calls the built-in kwok stages.
const stagesName = "stages"

// newProfileCommand prints the built-in files a user starts their own
// --profile-file or --stage-file from.
func newProfileCommand(g *globals) *cobra.Command {
	names := append(fleet.ComponentProfileNames(), stagesName)
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Print a built-in component profile or the built-in kwok stages, to copy for up --profile-file or --stage-file",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show NAME",
		Short: "Print built-in file NAME: " + strings.Join(names, ", "),
		Long: `Print a built-in file as embedded in this binary:

  a component profile (` + strings.Join(fleet.ComponentProfileNames(), ", ") + `): fleet/profiles/NAME.yaml, a
    ghostfleet.dev/v1alpha1 ComponentProfile and the KubeSchedulerConfiguration
    kube-scheduler runs with; a copy under another metadata.name is a
    --profile-file for up, and so is a file that names it in base and
    holds only what it changes (ghostfleet up --help).
  ` + stagesName + `: fleet/stages/*.yaml, every kwok Stage up installs; a stage with a
    built-in's name in a --stage-file replaces it.`,
		Example: `  ghostfleet profile show tuned > mine.yaml     # edit metadata.name and the figures
  ghostfleet up --profile-file mine.yaml
  ghostfleet profile show stages > stages.yaml  # keep the stages you change
  ghostfleet up --stage-file stages.yaml`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: names,
		RunE: func(_ *cobra.Command, args []string) error {
			var files []string
			switch name := args[0]; {
			case name == stagesName:
				files = fleet.BuiltinStageFiles()
			default:
				if _, err := fleet.LookupComponentProfile(name); err != nil {
					return fmt.Errorf("%w, or %s for the kwok stages", err, stagesName)
				}
				files = []string{"profiles/" + name + ".yaml"}
			}
			for i, f := range files {
				data, err := fleet.BuiltinFile(f)
				if err != nil {
					return err
				}
				if i > 0 {
					fmt.Fprintln(g.streams.Out, "---")
				}
				fmt.Fprintf(g.streams.Out, "# fleet/%s\n", f)
				if _, err := g.streams.Out.Write(data); err != nil {
					return err
				}
			}
			return nil
		},
	})
	return cmd
}
