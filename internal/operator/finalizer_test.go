package operator

import (
	"context"
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/controller"
)

// TestFinalizerAdder: a created cluster that will need the cleanup
// finalizer gets it, by a patch that adds exactly it; nothing else is
// touched, and an update is never patched (the controller restores a
// finalizer removed later, and the cleanup's own removal must stand).
func TestFinalizerAdder(t *testing.T) {
	job := func() *v1.FlinkCluster {
		fc := &v1.FlinkCluster{TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "FlinkCluster"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fc"}}
		fc.Spec.Version = "1.17.1"
		fc.Spec.Job = &v1.JobSpec{JarURI: "https://artifacts/job.jar"}
		return fc
	}
	session := job()
	session.Spec.Job = nil
	other := job()
	other.Finalizers = []string{"example.com/keep"}
	has := job()
	has.Finalizers = []string{controller.Finalizer}
	for _, tc := range []struct {
		name    string
		op      admissionv1.Operation
		fc      *v1.FlinkCluster
		patch   []map[string]any
		watched map[string]bool
		ignored map[string]bool
	}{
		{"in a watched namespace", admissionv1.Create, job(), []map[string]any{
			{"op": "add", "path": "/metadata/finalizers", "value": []any{controller.Finalizer}}}, map[string]bool{"ns": true}, nil},
		// No operator here would ever remove it: the deletion would hang.
		{"outside the watched namespaces", admissionv1.Create, job(), nil, map[string]bool{"team-a": true}, nil},
		{"in an ignored namespace", admissionv1.Create, job(), nil, nil, map[string]bool{"ns": true}},
		{"a job cluster created", admissionv1.Create, job(), []map[string]any{
			{"op": "add", "path": "/metadata/finalizers", "value": []any{controller.Finalizer}}}, nil, nil},
		{"beside another finalizer", admissionv1.Create, other, []map[string]any{
			{"op": "add", "path": "/metadata/finalizers/-", "value": controller.Finalizer}}, nil, nil},
		{"already there", admissionv1.Create, has, nil, nil, nil},
		{"a session cluster with nothing to clean up", admissionv1.Create, session, nil, nil, nil},
		{"an update", admissionv1.Update, job(), nil, nil, nil},
	} {
		raw, err := json.Marshal(tc.fc)
		if err != nil {
			t.Fatal(err)
		}
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: tc.op, Namespace: tc.fc.Namespace, Object: runtime.RawExtension{Raw: raw}}}
		res := finalizerAdder{decoder: admission.NewDecoder(Scheme()), watched: tc.watched, ignored: tc.ignored}.Handle(context.Background(), req)
		if !res.Allowed {
			t.Errorf("%s: refused: %+v", tc.name, res.Result)
			continue
		}
		var got []map[string]any
		for _, p := range res.Patches {
			b, _ := json.Marshal(p)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			got = append(got, m)
		}
		want, _ := json.Marshal(tc.patch)
		if g, _ := json.Marshal(got); string(g) != string(want) {
			t.Errorf("%s: patch %s, want %s", tc.name, g, want)
		}
	}
}
