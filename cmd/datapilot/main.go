// Command datapilot is the Datapilot operator, the binary the image ships.
//
//	datapilot operator   run the manager (in a cluster, or against any kubeconfig)
//	datapilot convert    convert FlinkCluster manifests between API versions, offline
//	datapilot render     print the objects the operator would create for a FlinkCluster
//	datapilot version    print the stamped version
//
// It links neither the Flink REST simulator nor the local platform (a test
// in this package checks its dependencies); `make run` uses
// cmd/datapilot-local for those.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/datapilot/datapilot/internal/buildinfo"
	"github.com/datapilot/datapilot/internal/operator"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "datapilot",
		Short:         "Datapilot runs Apache Flink clusters on Kubernetes from FlinkCluster resources",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newOperatorCommand(), newConvertCommand(), newRenderCommand(), newVersionCommand())
	return root
}

func newOperatorCommand() *cobra.Command {
	opts, envErr := operator.Defaults()
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the FlinkCluster operator",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if envErr != nil {
				return envErr
			}
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return fmt.Errorf("load kubeconfig: %w", err)
			}
			setGCPercent(os.Getenv)
			return operator.Run(ctrl.SetupSignalHandler(), cfg, opts)
		},
	}
	opts.BindFlags(cmd.Flags())
	// controller-runtime registers --kubeconfig on the Go flag set; without
	// it, the in-cluster config or $KUBECONFIG is used.
	if f := flag.CommandLine.Lookup("kubeconfig"); f != nil {
		cmd.Flags().AddGoFlag(f)
	}
	return cmd
}

func newVersionCommand() *cobra.Command {
	var short bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, revision and Go version the binary was built with",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			if short {
				fmt.Fprintln(cmd.OutOrStdout(), buildinfo.Version())
				return
			}
			fmt.Fprintln(cmd.OutOrStdout(), buildinfo.String())
		},
	}
	cmd.Flags().BoolVar(&short, "short", false, "Print the version only.")
	return cmd
}

// DefaultGCPercent is the operator's GOGC unless the environment sets one.
// Go's default (100) lets the heap grow to twice the live heap between
// collections; the live heap is mostly the cache, which grows with the
// clusters, so at 50 the peak follows it more closely. The cost is the
// operator's own CPU, a small part of what a cluster costs the machine
// (docs/performance.md).
const DefaultGCPercent = 50

// setGCPercent applies DefaultGCPercent when GOGC is not set: a platform
// team's GOGC, read by the runtime itself, wins.
func setGCPercent(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
