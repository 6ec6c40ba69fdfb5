package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/convert"
	"github.com/datapilot/datapilot/internal/manifest"
)

func newConvertCommand() *cobra.Command {
	var files []string
	var outputVersion, output string
	cmd := &cobra.Command{
		Use:   "convert -f FILE [-f FILE...] [--output-version data.example.com/v1]",
		Short: "Convert FlinkCluster manifests to another API version, offline",
		Long: `Convert reads manifests (several documents per file, Lists, '-' for stdin)
and writes them with every FlinkCluster in --output-version, through the
same conversion the operator's webhook serves. Objects of other kinds and
groups are written unchanged. kubectl convert cannot convert custom
resources; this can, without a cluster.`,
		Example: `  datapilot convert -f examples/v1alpha1-legacy.yaml --output-version data.example.com/v1
  datapilot convert -f old/ -o json | kubectl apply --server-side -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			objs, err := readFiles(files, cmd.InOrStdin())
			if err != nil {
				return err
			}
			out, err := convert.New().Convert(objs, outputVersion)
			if err != nil {
				return err
			}
			return writeObjects(cmd.OutOrStdout(), output, contents(out))
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "Manifest file or directory of .yaml/.yml/.json files to convert ('-' for stdin); repeatable.")
	cmd.Flags().StringVar(&outputVersion, "output-version", v1.GroupVersion.String(), fmt.Sprintf("API version to write FlinkClusters in: one of %v.", convert.Versions))
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "Output format: yaml (one document per object) or json (one List).")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// readFiles reads every object of files, in order; a directory contributes
// its .yaml, .yml and .json files in name order.
func readFiles(files []string, stdin io.Reader) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, f := range files {
		if f == "-" {
			got, err := manifest.Read(stdin, "stdin")
			if err != nil {
				return nil, err
			}
			objs = append(objs, got...)
			continue
		}
		paths, err := manifest.Files(f)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			r, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			got, err := manifest.Read(r, p)
			r.Close()
			if err != nil {
				return nil, err
			}
			objs = append(objs, got...)
		}
	}
	return objs, nil
}

func contents(objs []*unstructured.Unstructured) []map[string]any {
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = o.Object
	}
	return out
}

func writeObjects(w io.Writer, format string, objs []map[string]any) error {
	switch format {
	case "yaml":
		return manifest.Write(w, objs)
	case "json":
		return manifest.WriteJSON(w, objs)
	}
	return fmt.Errorf("--output %q: want yaml or json", format)
}
