// Command datapilot is the Datapilot operator and its local platform.
//
//	datapilot operator   run the manager (in a cluster, or against any kubeconfig)
//	datapilot local up   run an embedded control plane with the operator in it
//	datapilot version    print the version
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/datapilot/datapilot/internal/operator"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	root := &cobra.Command{
		Use:           "datapilot",
		Short:         "Datapilot runs Apache Flink clusters on Kubernetes from FlinkCluster resources",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newOperatorCommand(), newLocalCommand(), newVersionCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
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
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), version) },
	}
}
