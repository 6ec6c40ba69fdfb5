package controller

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/datapilot/datapilot/internal/render"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testenv"
)

// A child created typed (protobuf on the wire) is the object the API server
// would have decoded from the apply configuration's JSON: the same fields,
// the same values, quantities and int-or-strings included, for every child
// of every v1 example.
func TestCreatedTypedAsTheJSONWouldDecode(t *testing.T) {
	r, err := render.New()
	if err != nil {
		t.Fatal(err)
	}
	scheme := clientgoscheme.Scheme
	for _, file := range []string{"dedicated-pool.yaml", "streaming-job.yaml", "realtime-warehouse.yaml", "autopilot.yaml", "sql-job.yaml"} {
		raw, err := os.ReadFile(filepath.Join(testenv.Root(), "examples", file))
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			t.Fatal(err)
		}
		fc, err := r.FlinkCluster(u, "team-a")
		if err != nil {
			t.Fatal(err)
		}
		d, err := resources.Build(fc, resources.Platform{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ac := range []runtime.ApplyConfiguration{d.ConfigMap, d.JobManagerService, d.JobManager, d.TaskManagerBudget, d.TaskManager} {
			got, err := asTyped(scheme, ac)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			body, err := json.Marshal(ac)
			if err != nil {
				t.Fatal(err)
			}
			want, err := scheme.New(got.GetObjectKind().GroupVersionKind())
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(body, want); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("%s: %T created typed differs from its JSON body:\n got %+v\nwant %+v", file, got, got, want)
			}
		}
	}
}
