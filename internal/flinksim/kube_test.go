package flinksim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
)

// operatorNamespace is what the operator renders for fc, with the pods its
// Deployment and StatefulSet would make, running and Ready; edit changes
// the objects before the simulator reads them.
func operatorNamespace(t *testing.T, fc *v1.FlinkCluster, tms int) namespaceView {
	t.Helper()
	d, err := resources.Build(fc, resources.Platform{})
	if err != nil {
		t.Fatal(err)
	}
	v := namespaceView{namespace: fc.Namespace, configMaps: map[string]*corev1.ConfigMap{}}
	var cm corev1.ConfigMap
	convert(t, d.ConfigMap, &cm)
	v.configMaps[cm.Name] = &cm
	var jmSvc corev1.Service
	convert(t, d.JobManagerService, &jmSvc)
	jmSvc.Spec.ClusterIP = "10.96.0.10"
	v.services = []corev1.Service{jmSvc}
	var jmT, tmT corev1.PodTemplateSpec
	convert(t, d.JobManager.Spec.Template, &jmT)
	convert(t, d.TaskManager.Spec.Template, &tmT)
	pod := func(name string, tmpl corev1.PodTemplateSpec, ip string, age int) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: fc.Namespace, Name: name, UID: types.UID("uid-" + name), Labels: tmpl.Labels,
				CreationTimestamp: metav1.NewTime(time.Unix(1700000000, 0).Add(time.Duration(age) * time.Second))},
			Spec: *tmpl.Spec.DeepCopy(),
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
	}
	v.pods = append(v.pods, pod(fc.Name+"-jobmanager-abc", jmT, "10.0.0.1", 0))
	for i := range tms {
		p := pod(fmt.Sprintf("%s-taskmanager-%d", fc.Name, i), tmT, fmt.Sprintf("10.0.1.%d", i), 1+i)
		p.Spec.Hostname, p.Spec.Subdomain = p.Name, *d.TaskManager.Spec.ServiceName
		v.pods = append(v.pods, p)
	}
	return v
}

func demoCluster(version string) *v1.FlinkCluster {
	return &v1.FlinkCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "demo"},
		Spec: v1.FlinkClusterSpec{
			Version: version, JobManager: v1.JobManagerSpec{Replicas: 1}, TaskManager: v1.TaskManagerSpec{Replicas: 2, Slots: 2},
		},
	}
}

// observeAll feeds an Engine what the watch would from the namespace.
func observeAll(e *Engine, v namespaceView, access Access) grouping {
	g := observeNamespace(v, access, &confCache{}, nil)
	for k, o := range g.clusters {
		e.Observe(k, o)
	}
	return g
}

var demoKey = ClusterKey{Namespace: "team-a", Name: "demo-jobmanager"}

// What the operator renders wires up as Flink would: one cluster, named
// after its JobManager Service, whose TaskManagers register through the
// Service named in jobmanager.rpc.address.
func TestOperatorClusterWiresUp(t *testing.T) {
	for _, version := range []string{"1.18.1", "1.20.1", "2.1.0"} {
		t.Run(version, func(t *testing.T) {
			e, _ := newTestEngine(t)
			g := observeAll(e, operatorNamespace(t, demoCluster(version), 2), nil)
			if len(g.clusters) != 1 {
				t.Fatalf("clusters %v", g.clusters)
			}
			ov, err := e.Overview(demoKey)
			if err != nil {
				t.Fatal(err)
			}
			if ov.TaskManagers != 2 || ov.SlotsTotal != 4 || ov.FlinkVersion != version {
				t.Errorf("overview %+v", ov)
			}
		})
	}
}

// Each edit makes the wiring less kind than the operator's; the cluster
// must then show what Flink would: no TaskManager registered, a refused
// REST connection, a JobManager that does not start.
func TestWiringFollowsFlink(t *testing.T) {
	setEnv := func(c *corev1.Container, name, value string) {
		c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	}
	jm := func(v *namespaceView) *corev1.Pod { return &v.pods[0] }
	tm := func(v *namespaceView, i int) *corev1.Pod { return &v.pods[1+i] }
	cm := func(v *namespaceView) *corev1.ConfigMap { return v.configMaps["demo-config"] }
	replaceConf := func(v *namespaceView, from, to string) {
		for k, c := range cm(v).Data {
			cm(v).Data[k] = strings.ReplaceAll(c, from, to)
		}
	}
	for _, tc := range []struct {
		name string
		edit func(v *namespaceView)
		// wantTMs is the registered TaskManagers; wantREST the overview's
		// error ("" when it answers); wantJM a JobManager refusal.
		wantTMs        int
		wantREST       string
		wantJM         string
		wantOtherSlots int
		// noCluster: no cluster is behind the Service.
		noCluster bool
	}{
		{name: "as rendered", wantTMs: 2},
		{name: "role from the entrypoint argument, not the component label", edit: func(v *namespaceView) {
			tm(v, 0).Spec.Containers[0].Args = []string{"history-server"}
		}, wantTMs: 1},
		{name: "a TaskManager labelled jobmanager is still a TaskManager", edit: func(v *namespaceView) {
			tm(v, 0).Labels = jm(v).Labels
		}, wantTMs: 2},
		{name: "the entrypoint through an explicit command", edit: func(v *namespaceView) {
			c := &tm(v, 0).Spec.Containers[0]
			c.Command, c.Args = []string{"/docker-entrypoint.sh"}, []string{"taskmanager"}
		}, wantTMs: 2},
		{name: "a start script as the command", edit: func(v *namespaceView) {
			c := &tm(v, 1).Spec.Containers[0]
			c.Command, c.Args = []string{"/opt/flink/bin/taskmanager.sh", "start-foreground"}, nil
		}, wantTMs: 2},
		{name: "FLINK_CONF_DIR elsewhere: the JobManager finds no directory", edit: func(v *namespaceView) {
			setEnv(&jm(v).Spec.Containers[0], "FLINK_CONF_DIR", "/etc/flink")
		}, wantREST: "connection refused", wantJM: "The given configuration directory name '/etc/flink' (/etc/flink) does not describe an existing directory."},
		{name: "FLINK_CONF_DIR where the ConfigMap is mounted", edit: func(v *namespaceView) {
			for _, p := range v.pods {
				setEnv(&p.Spec.Containers[0], "FLINK_CONF_DIR", "/etc/flink")
				for i := range p.Spec.Containers[0].VolumeMounts {
					if m := &p.Spec.Containers[0].VolumeMounts[i]; m.MountPath == "/opt/flink/conf" {
						m.MountPath = "/etc/flink"
					}
				}
			}
		}, wantTMs: 2},
		{name: "ConfigMap items: only the listed key, at its path", edit: func(v *namespaceView) {
			for _, vol := range jm(v).Spec.Volumes {
				if vol.ConfigMap != nil {
					vol.ConfigMap.Items = []corev1.KeyToPath{{Key: "log4j-console.properties", Path: "log4j-console.properties"}}
				}
			}
		}, wantREST: "connection refused", wantJM: "config.yaml' (/opt/flink/conf/config.yaml) does not exist."},
		{name: "the configuration file as a subPath over the image's conf", edit: func(v *namespaceView) {
			for _, p := range v.pods {
				mountConfAsFile(p.Spec.Containers, "config.yaml")
			}
		}, wantTMs: 2},
		{name: "a TaskManager dialling a name that resolves to nothing registers nowhere", edit: func(v *namespaceView) {
			replaceConf(v, "jobmanager.rpc.address: demo-jobmanager", "jobmanager.rpc.address: demo-jm")
		}, wantTMs: 0},
		{name: "the Service's fully qualified name reaches it, but Pekko drops messages not addressed to the JobManager's own name", edit: func(v *namespaceView) {
			tm(v, 0).Spec.Containers[0].Args = []string{"taskmanager", "-Djobmanager.rpc.address=demo-jobmanager.team-a.svc.cluster.local"}
		}, wantTMs: 1},
		{name: "the JobManager's pod IP reaches it, under another name than its own", edit: func(v *namespaceView) {
			tm(v, 0).Spec.Containers[0].Args = []string{"taskmanager", "-Djobmanager.rpc.address=10.0.0.1"}
		}, wantTMs: 1},
		{name: "a Service whose rpc port leads nowhere", edit: func(v *namespaceView) {
			v.services[0].Spec.Ports[0].TargetPort = intstr.FromInt32(7000)
		}, wantTMs: 0},
		{name: "a Service whose rest targetPort names no container port refuses", edit: func(v *namespaceView) {
			v.services[0].Spec.Ports[2].TargetPort = intstr.FromString("http")
		}, wantTMs: 2, wantREST: "connection refused"},
		{name: "a Service whose rest targetPort is not the JobManager's rest.port refuses", edit: func(v *namespaceView) {
			v.services[0].Spec.Ports[2].TargetPort = intstr.FromInt32(8080)
		}, wantTMs: 2, wantREST: "connection refused"},
		{name: "a Service selecting no pod refuses", edit: func(v *namespaceView) {
			v.services[0].Spec.Selector = map[string]string{"app": "other"}
		}, noCluster: true, wantREST: "connection refused"},
		{name: "a JobManager not Ready is no endpoint: no registration, no REST", edit: func(v *namespaceView) {
			jm(v).Status.Conditions[0].Status = corev1.ConditionFalse
		}, wantTMs: 0, wantREST: "connection refused"},
		{name: "a TaskManager pointed at another cluster's Service gives its slots there", edit: func(v *namespaceView) {
			other := operatorNamespace(t, &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "other"},
				Spec: v1.FlinkClusterSpec{Version: "1.20.1", JobManager: v1.JobManagerSpec{Replicas: 1}, TaskManager: v1.TaskManagerSpec{Replicas: 0, Slots: 2}}}, 0)
			other.pods[0].Status.PodIP = "10.0.0.2"
			other.services[0].Spec.ClusterIP = "10.96.0.11"
			v.pods = append(v.pods, other.pods...)
			v.services = append(v.services, other.services...)
			v.configMaps["other-config"] = other.configMaps["other-config"]
			tm(v, 0).Spec.Containers[0].Args = []string{"taskmanager", "-Djobmanager.rpc.address=other-jobmanager"}
		}, wantTMs: 1, wantOtherSlots: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newTestEngine(t)
			v := operatorNamespace(t, demoCluster("1.20.1"), 2)
			if tc.edit != nil {
				tc.edit(&v)
			}
			observeAll(e, v, nil)
			view, err := e.View(demoKey)
			if tc.noCluster != (err != nil) {
				t.Fatalf("view: %v", err)
			}
			if view.TaskManagers != tc.wantTMs {
				t.Errorf("registered TaskManagers = %d, want %d; events %v", view.TaskManagers, tc.wantTMs, view.Events)
			}
			_, err = e.Overview(demoKey)
			switch {
			case tc.wantREST == "" && err != nil:
				t.Errorf("overview: %v", err)
			case tc.wantREST != "" && (err == nil || !strings.Contains(err.Error(), tc.wantREST)):
				t.Errorf("overview: %v, want %q", err, tc.wantREST)
			}
			if tc.wantJM != "" && (len(view.JobManagers) != 1 || !strings.Contains(view.JobManagers[0].Down, tc.wantJM)) {
				t.Errorf("JobManagers %+v, want one refusing %q", view.JobManagers, tc.wantJM)
			}
			if tc.wantOtherSlots > 0 {
				ov, err := e.Overview(ClusterKey{Namespace: "team-a", Name: "other-jobmanager"})
				if err != nil || int(ov.SlotsTotal) != tc.wantOtherSlots {
					t.Errorf("the other cluster: %+v, %v", ov, err)
				}
			}
		})
	}
}

// Kubernetes HA: a JobManager whose ServiceAccount may not use ConfigMaps
// listens but never leads (503 while the election is pending); with the
// rights it leads, and the TaskManagers register with it through the HA
// services, whatever jobmanager.rpc.address says.
func TestKubernetesHANeedsConfigMapRights(t *testing.T) {
	fc := demoCluster("1.20.1")
	fc.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
	fc.Spec.Storage = &v1.StorageSpec{ClaimName: "state"}
	e, _ := newTestEngine(t)
	v := operatorNamespace(t, fc, 2)
	var asked []string
	refuse := func(ns, sa string, verbs []string) string {
		asked = append(asked, fmt.Sprint(ns, " ", sa, " ", verbs))
		return "configmaps is forbidden"
	}
	observeAll(e, v, refuse)
	if want := "team-a team-a/demo-ha [get list watch create update]"; len(asked) != 3 || asked[0] != want || asked[1] != "team-a team-a/demo-ha [get list watch]" {
		t.Errorf("asked %v, want %q for the JobManager, then get, list and watch for each TaskManager", asked, want)
	}
	_, err := e.Overview(demoKey)
	wantErr(t, err, 503, "ongoing leader election")
	view, _ := e.View(demoKey)
	if view.TaskManagers != 0 || !strings.Contains(strings.Join(view.JobManagers[0].Log, "\n"), "configmaps is forbidden") {
		t.Errorf("without rights: %d TaskManagers, JobManager log %v", view.TaskManagers, view.JobManagers[0].Log)
	}
	// Granted: the next observation elects it.
	for i := range v.pods[1:] {
		v.pods[1+i].Spec.Containers[0].Args = []string{"taskmanager", "-Djobmanager.rpc.address=nowhere"}
	}
	// The JobManager's rights alone: it leads; the TaskManagers, refused
	// the leader ConfigMap, never find it.
	observeAll(e, v, func(_, _ string, verbs []string) string {
		if len(verbs) == len(haRetrievalVerbs) {
			return "configmaps is forbidden"
		}
		return ""
	})
	if ov, err := e.Overview(demoKey); err != nil || ov.TaskManagers != 0 {
		t.Errorf("with the JobManager's rights only: %+v, %v", ov, err)
	}
	observeAll(e, v, func(string, string, []string) string { return "" })
	ov, err := e.Overview(demoKey)
	if err != nil || ov.TaskManagers != 2 {
		t.Errorf("with rights: %+v, %v", ov, err)
	}
}

// Kubernetes expands $(VAR) in args from the container's environment,
// downward API fields included; jobmanager.sh takes a first argument other
// than -D as the host, which overrides jobmanager.rpc.address.
func TestStartArguments(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "jm", Namespace: "ns"}, Status: corev1.PodStatus{PodIP: "10.0.0.7"}}
	c := &corev1.Container{Env: []corev1.EnvVar{
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "ADDR", Value: "$(POD_IP):$$(POD_IP):$(UNSET)"},
	}}
	env := containerEnv(p, c, nil)
	if env["ADDR"] != "10.0.0.7:$(POD_IP):$(UNSET)" {
		t.Errorf("ADDR = %q", env["ADDR"])
	}
	for _, tc := range []struct {
		args     []string
		host     string
		restPort string
		dynamic  map[string]string
	}{
		{[]string{"$(POD_IP)"}, "10.0.0.7", "", map[string]string{}},
		{[]string{"-D", "a=b", "-Dc=d"}, "", "", map[string]string{"a": "b", "c": "d"}},
		// [[ $2 == "-D" ]] is false for "-Da=b": it becomes the host.
		{[]string{"-Da=b"}, "-Da=b", "", map[string]string{}},
		{[]string{"host", "8082", "-D", "a=b"}, "host", "8082", map[string]string{"a": "b"}},
	} {
		r, args := ContainerRole(nil, append([]string{"jobmanager"}, expandAll(tc.args, env)...))
		got := parseStartArgs(r, args)
		if r != RoleJobManager || got.host != tc.host || got.restPort != tc.restPort || fmt.Sprint(got.dynamic) != fmt.Sprint(tc.dynamic) {
			t.Errorf("%v: %s %+v", tc.args, r, got)
		}
	}
}

// mountConfAsFile mounts the configuration ConfigMap's key as one file,
// /opt/flink/conf/config.yaml, instead of the whole directory.
func mountConfAsFile(cs []corev1.Container, key string) {
	for i := range cs[0].VolumeMounts {
		if m := &cs[0].VolumeMounts[i]; m.MountPath == "/opt/flink/conf" {
			m.MountPath, m.SubPath = "/opt/flink/conf/config.yaml", key
		}
	}
}
