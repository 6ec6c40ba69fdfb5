package controller

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/render"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testenv"
)

// A child created typed reaches the API server as the object the JSON body
// of the unstructured create decoded to: encoded as protobuf and decoded
// again, it equals what the API server's JSON decoder makes of that body,
// nil and empty told apart (protobuf cannot carry an empty list or map; the
// JSON body never had one, ToUnstructured drops them), for every child of
// every v1 example.
func TestCreatedTypedAsTheJSONWouldDecode(t *testing.T) {
	r, err := render.New()
	if err != nil {
		t.Fatal(err)
	}
	scheme, codecs := clientgoscheme.Scheme, clientgoscheme.Codecs
	proto, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	for _, file := range []string{"dedicated-pool.yaml", "streaming-job.yaml", "realtime-warehouse.yaml", "autopilot.yaml", "sql-job.yaml"} {
		fc, err := r.FlinkCluster(exampleObject(t, file), "team-a")
		if err != nil {
			t.Fatal(err)
		}
		d, err := resources.Build(fc, resources.Platform{Storage: &v1.StorageSpec{URI: "s3://state/flink"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, ac := range []runtime.ApplyConfiguration{d.ConfigMap, d.JobManagerService, d.JobManager, d.TaskManagerBudget, d.TaskManager} {
			typed, err := asTyped(scheme, ac)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			var wire bytes.Buffer
			if err := proto.Serializer.Encode(typed, &wire); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			got, _, err := proto.Serializer.Decode(wire.Bytes(), nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			old, err := asObject(ac)
			if err != nil {
				t.Fatal(err)
			}
			body, err := old.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := codecs.UniversalDeserializer().Decode(body, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if !equality.Semantic.DeepEqualWithNilDifferentFromEmpty(got, want) {
				t.Errorf("%s: %T created as protobuf differs from its JSON body:\n got %+v\nwant %+v", file, got, got, want)
			}
		}
	}
}

// exampleObject is the FlinkCluster of examples/<file>, as written.
func exampleObject(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.Root(), "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}
