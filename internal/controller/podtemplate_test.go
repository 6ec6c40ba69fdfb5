package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testwait"
)

func example(t *testing.T, ns, file string) *unstructured.Unstructured {
	t.Helper()
	u := controller.ExampleObject(t, file)
	u.SetNamespace(ns)
	return u
}

// template returns spec.<component>.podTemplate.spec of an unstructured
// cluster, creating it.
func template(s map[string]any, component string) map[string]any {
	return sub(sub(sub(s, component), "podTemplate"), "spec")
}

func flinkContainer(component string, fields map[string]any) []any {
	c := map[string]any{"name": strings.ToLower(component)}
	for k, v := range fields {
		c[k] = v
	}
	return []any{c}
}

// TestPodTemplateRefusesWhatTheOperatorOwns: every field of the Flink
// container the operator owns, its volume names, its selector labels and
// annotations, the pod fields a template has no place for, and the Flink
// container names in the wrong places are refused by the API server,
// with a message naming the field.
func TestPodTemplateRefusesWhatTheOperatorOwns(t *testing.T) {
	ns := namespace(t)
	owned := map[string]any{
		"command":         []any{"sleep"},
		"args":            []any{"infinity"},
		"image":           "evil:latest",
		"imagePullPolicy": "Never",
		"ports":           []any{map[string]any{"containerPort": 1}},
		"livenessProbe":   map[string]any{"tcpSocket": map[string]any{"port": 1}},
		"readinessProbe":  map[string]any{"tcpSocket": map[string]any{"port": 1}},
		"startupProbe":    map[string]any{"tcpSocket": map[string]any{"port": 1}},
		"resources":       map[string]any{"limits": map[string]any{"memory": "1Gi"}},
	}
	type tc struct {
		name     string
		mutate   func(spec map[string]any)
		wantText []string
	}
	var cases []tc
	for _, component := range []string{"jobManager", "taskManager"} {
		for field, value := range owned {
			cases = append(cases, tc{component + " Flink container " + field, func(s map[string]any) {
				template(s, component)["containers"] = flinkContainer(component, map[string]any{field: value})
			}, []string{"spec." + component + ".podTemplate.spec.containers", field + " must not be set on the Flink container"}})
		}
		for _, name := range resources.ReservedVolumeNames {
			cases = append(cases, tc{component + " volume " + name, func(s map[string]any) {
				template(s, component)["volumes"] = []any{map[string]any{"name": name, "emptyDir": map[string]any{}}}
			}, []string{"spec." + component + ".podTemplate.spec.volumes", "are the names of the volumes the operator mounts"}})
		}
	}
	cases = append(cases,
		tc{"selector label", func(s map[string]any) {
			sub(sub(sub(s, "taskManager"), "podTemplate"), "metadata")["labels"] = map[string]any{"team": "a", resources.LabelInstance: "other"}
		}, []string{"spec.taskManager.podTemplate.metadata.labels", "labels: app.kubernetes.io/instance is set by the operator"}},
		tc{"version label", func(s map[string]any) {
			sub(sub(sub(s, "jobManager"), "podTemplate"), "metadata")["labels"] = map[string]any{resources.LabelVersion: "2.0"}
		}, []string{"spec.jobManager.podTemplate.metadata.labels", "app.kubernetes.io/version is set by the operator"}},
		tc{"operator annotation", func(s map[string]any) {
			sub(sub(sub(s, "taskManager"), "podTemplate"), "metadata")["annotations"] = map[string]any{resources.AnnotationConfigHash: "x"}
		}, []string{"spec.taskManager.podTemplate.metadata.annotations", "annotations: data.example.com/config-hash is under data.example.com/"}},
		tc{"TaskManager container in the JobManager template", func(s map[string]any) {
			template(s, "jobManager")["containers"] = []any{map[string]any{"name": "taskmanager", "image": "x"}}
		}, []string{"spec.jobManager.podTemplate", "taskmanager is the Flink container of the TaskManager pods"}},
		tc{"JobManager container in the TaskManager template", func(s map[string]any) {
			template(s, "taskManager")["containers"] = []any{map[string]any{"name": "jobmanager", "image": "x"}}
		}, []string{"spec.taskManager.podTemplate", "jobmanager is the Flink container of the JobManager pods"}},
		tc{"init container named like the Flink container", func(s map[string]any) {
			template(s, "taskManager")["initContainers"] = []any{map[string]any{"name": "taskmanager", "image": "x"}}
		}, []string{"spec.taskManager.podTemplate.spec.initContainers", "jobmanager and taskmanager are the names of the Flink containers"}},
		tc{"service account in the template", func(s map[string]any) {
			template(s, "jobManager")["serviceAccountName"] = "root"
		}, []string{`unknown field "spec.jobManager.podTemplate.spec.serviceAccountName"`}},
		tc{"host network", func(s map[string]any) {
			template(s, "taskManager")["hostNetwork"] = true
		}, []string{`unknown field "spec.taskManager.podTemplate.spec.hostNetwork"`}},
		tc{"a field misspelt in a sidecar", func(s map[string]any) {
			template(s, "taskManager")["containers"] = []any{map[string]any{"name": "agent", "image": "x", "imagePullPolicey": "Always"}}
		}, []string{`unknown field "spec.taskManager.podTemplate.spec.containers[0].imagePullPolicey"`}},
		tc{"two sidecars of one name", func(s map[string]any) {
			template(s, "taskManager")["containers"] = []any{map[string]any{"name": "agent", "image": "x"}, map[string]any{"name": "agent", "image": "y"}}
		}, []string{"spec.taskManager.podTemplate.spec.containers[1]", "Duplicate value"}},
		tc{"unknown spread", func(s map[string]any) { sub(s, "taskManager")["spread"] = "sometimes" }, []string{"spec.taskManager.spread", `"preferred", "required", "none"`}},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := referenceExample(t, ns)
			u.SetName("bad-template")
			tc.mutate(u.Object["spec"].(map[string]any))
			err := k8s.Create(context.Background(), u, client.FieldValidation(metav1.FieldValidationStrict))
			if err == nil {
				_ = k8s.Delete(context.Background(), u)
				t.Fatalf("the API server accepted %s", tc.name)
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
				t.Fatalf("want a validation error, got %v", err)
			}
			t.Log(err)
			for _, want := range tc.wantText {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q: %v", want, err)
				}
			}
		})
	}
}

// TestPodTemplateIsAcceptedAndApplied: the README's dedicated node pool
// example and a sidecar that sets what the Flink container may not are
// admitted, and the workloads carry the template, merged.
func TestPodTemplateIsAcceptedAndApplied(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	u := example(t, ns, "dedicated-pool.yaml")
	// A sidecar may set its own command, image, ports, probes and
	// resources; and a typed client sends an empty resources for the Flink
	// container, which is no setting.
	tmpl := template(u.Object["spec"].(map[string]any), "taskManager")
	tmpl["containers"] = append(tmpl["containers"].([]any),
		map[string]any{"name": "proxy", "image": "envoy:1", "command": []any{"envoy"}, "args": []any{"-c", "/etc/envoy.yaml"},
			"ports": []any{map[string]any{"containerPort": 9901}}, "readinessProbe": map[string]any{"tcpSocket": map[string]any{"port": 9901}}})
	tmpl["containers"].([]any)[0].(map[string]any)["resources"] = map[string]any{}
	if err := k8s.Create(ctx, u, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
		t.Fatalf("the API server refused the dedicated pool example: %v", err)
	}
	name := u.GetName()
	var sts appsv1.StatefulSet
	testwait.Until(t, 15*time.Second, func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-taskmanager"}, &sts)
	})
	pod := sts.Spec.Template
	if pod.Spec.NodeSelector["pool"] != "flink" || len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0].Key != "dedicated" {
		t.Errorf("TaskManager pods: node selector %v, tolerations %v", pod.Spec.NodeSelector, pod.Spec.Tolerations)
	}
	if pod.Labels["team"] != "data-platform" || pod.Labels[resources.LabelInstance] != name || pod.Annotations["prometheus.io/scrape"] != "true" {
		t.Errorf("TaskManager pod metadata: labels %v, annotations %v", pod.Labels, pod.Annotations)
	}
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "taskmanager,metrics-agent,proxy" {
		t.Errorf("containers %v, want the Flink container first, then the sidecars", names)
	}
	flink := pod.Spec.Containers[0]
	var tz bool
	for _, e := range flink.Env {
		tz = tz || e.Name == "TZ" && e.Value == "Europe/Amsterdam"
	}
	if !tz || flink.Image != "flink:1.20.1" {
		t.Errorf("Flink container: env %v, image %s", flink.Env, flink.Image)
	}
	for _, c := range pod.Spec.Containers {
		if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || fmt.Sprint(sc.Capabilities.Drop) != "[ALL]" {
			t.Errorf("container %s has no restricted security context: %+v", c.Name, sc)
		}
	}

	var dep appsv1.StatefulSet
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-jobmanager"}, &dep); err != nil {
		t.Fatal(err)
	}
	jm := dep.Spec.Template.Spec
	if a := jm.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 ||
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != corev1.LabelHostname {
		t.Errorf("JobManager anti-affinity %+v, want required on %s", jm.Affinity, corev1.LabelHostname)
	}
	if jm.NodeSelector["pool"] != "flink" || len(jm.Containers) != 1 {
		t.Errorf("JobManager pods: node selector %v, %d containers", jm.NodeSelector, len(jm.Containers))
	}
	fc := getCluster(t, ns, name)
	if fc.Spec.JobManager.Spread != v1.SpreadRequired {
		t.Errorf("spread %q after a round trip", fc.Spec.JobManager.Spread)
	}
}
