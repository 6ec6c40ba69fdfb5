package main

import (
	"fmt"

	"github.com/spf13/cobra"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/convert"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/render"
)

func newRenderCommand() *cobra.Command {
	var files []string
	var namespace, output string
	opts, envErr := operator.Defaults()
	cmd := &cobra.Command{
		Use:   "render -f cluster.yaml",
		Short: "Print the objects Datapilot would create for FlinkClusters, without a cluster",
		Long: `Render reads FlinkCluster manifests (v1 or v1alpha1; several documents
per file, Lists, '-' for stdin), applies the CRD's defaults as the API server
would, and prints the objects the operator creates for each: the ConfigMap
with the rendered Flink configuration, the Services, the JobManager
Deployment, the TaskManager StatefulSet, the PodDisruptionBudget and, with
Kubernetes HA, the pods' ServiceAccount, Role and RoleBinding. Diff it in
review or GitOps before applying a change.

The platform's shared storage is what the operator would use: the
--state-storage-uri or --state-storage-claim flag, else STATE_STORAGE_URI or
STATE_STORAGE_CLAIM. Admission rules are not evaluated offline: use
'kubectl apply --dry-run=server' for those.`,
		Example: `  datapilot render -f examples/realtime-warehouse.yaml --state-storage-uri s3://flink/state
  datapilot render -f cluster.yaml | kubectl diff --server-side -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if envErr != nil {
				return envErr
			}
			if err := opts.Validate(); err != nil {
				return err
			}
			objs, err := readFiles(files, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if objs, err = convert.New().Convert(objs, v1.GroupVersion.String()); err != nil {
				return err
			}
			r, err := render.New()
			if err != nil {
				return err
			}
			var out []map[string]any
			clusters := 0
			for _, o := range objs {
				if o.GroupVersionKind() != v1.GroupVersion.WithKind("FlinkCluster") {
					continue
				}
				fc, err := r.FlinkCluster(o, namespace)
				if err != nil {
					return err
				}
				children, err := render.Objects(fc, opts.Platform())
				if err != nil {
					return err
				}
				out = append(out, children...)
				clusters++
			}
			if clusters == 0 {
				return fmt.Errorf("no FlinkCluster in %v", files)
			}
			return writeObjects(cmd.OutOrStdout(), output, out)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&files, "filename", "f", nil, "FlinkCluster manifest file or directory ('-' for stdin); repeatable.")
	fs.StringVarP(&namespace, "namespace", "n", "default", "Namespace of FlinkClusters that name none.")
	fs.StringVarP(&output, "output", "o", "yaml", "Output format: yaml (one document per object) or json (one List).")
	fs.StringVar(&opts.StateStorageURI, "state-storage-uri", opts.StateStorageURI, "The platform's shared storage URI, as the operator's flag (STATE_STORAGE_URI).")
	fs.StringVar(&opts.StateStorageClaim, "state-storage-claim", opts.StateStorageClaim, "The platform's shared ReadWriteMany claim, as the operator's flag (STATE_STORAGE_CLAIM).")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// renderer is render.New, named for the tests.
var renderer = render.New
