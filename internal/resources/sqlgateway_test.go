package resources

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flinksim"
)

// A SQL job's JobManager pod runs the SQL Gateway beside the JobManager,
// started as the simulator (and the official image) recognise it; the
// NetworkPolicy opens every port but the gateway's to all, and the
// gateway's to the operator's pods only. A jar job has neither.
func TestSQLGateway(t *testing.T) {
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: "revenue", Namespace: "team-a"}, Spec: v1.FlinkClusterSpec{
		Version: "1.20.1", JobManager: v1.JobManagerSpec{Replicas: 1}, TaskManager: v1.TaskManagerSpec{Replicas: 1, Slots: 1},
		Checkpointing: &v1.CheckpointingSpec{Interval: "30s", Retention: 3},
		Job:           &v1.JobSpec{SQL: &v1.SQLJobSpec{Script: "INSERT INTO t SELECT * FROM s"}},
	}}
	d, err := Build(fc, Platform{OperatorNamespace: "datapilot-system"})
	if err != nil {
		t.Fatal(err)
	}
	cs := d.JobManager.Spec.Template.Spec.Containers
	if len(cs) != 2 || *cs[1].Name != SQLGatewayContainer {
		t.Fatalf("JobManager pod containers: %d", len(cs))
	}
	args, ok := flinksim.GatewayArgs(cs[1].Command, cs[1].Args)
	if !ok || len(args) == 0 {
		t.Fatalf("the gateway container does not start the SQL Gateway: %v %v", cs[1].Command, cs[1].Args)
	}
	for _, p := range d.JobManagerService.Spec.Ports {
		if *p.Port == PortSQLGateway {
			t.Fatal("the JobManager Service publishes the SQL Gateway's port")
		}
	}
	np := d.SQLGatewayPolicy
	if np == nil || len(np.Spec.Ingress) != 2 {
		t.Fatalf("NetworkPolicy: %+v", np)
	}
	for _, p := range np.Spec.Ingress[0].Ports {
		if lo, hi := p.Port.IntVal, *p.EndPort; *p.Protocol == "TCP" && lo <= PortSQLGateway && PortSQLGateway <= hi {
			t.Fatalf("the open rule admits the gateway's port: %d-%d", lo, hi)
		}
	}
	from := np.Spec.Ingress[1].From[0]
	if from.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "datapilot-system" || from.PodSelector.MatchLabels["app.kubernetes.io/name"] != "datapilot" {
		t.Fatalf("the gateway's port admits %+v", from)
	}
	fc.Spec.Job = &v1.JobSpec{JarURI: "https://jars/job.jar"}
	if d, _ := Build(fc, Platform{}); len(d.JobManager.Spec.Template.Spec.Containers) != 1 || d.SQLGatewayPolicy != nil {
		t.Fatal("a jar job got a SQL Gateway")
	}
}
