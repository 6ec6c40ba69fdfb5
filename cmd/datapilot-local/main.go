// Command datapilot-local is the development binary behind `make run`: an
// embedded control plane (internal/platform), the Flink REST simulator
// (internal/flinksim) and the operator in one process. The production
// binary, cmd/datapilot, links neither.
//
//	datapilot-local up       run the local platform with the operator in it
//	datapilot-local version  print the stamped version
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/datapilot/datapilot/internal/buildinfo"
)

func main() {
	root := &cobra.Command{
		Use:           "datapilot-local",
		Short:         "Datapilot on an embedded local control plane (no Docker needed)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newLocalUpCommand(), &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), buildinfo.String()) },
	})
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
