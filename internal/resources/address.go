package resources

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// AddressErrors refuses a TaskManager address the cluster cannot reach.
// A TaskManager advertises its IP by default in every minor
// (taskmanager.network.bind-policy "ip",
// TaskManagerRunner#determineTaskManagerBindAddress), and the JobManager
// and the other TaskManagers dial that. The operator gives TaskManager
// pods no DNS names (no Service): advertised as a name ("name", or
// taskmanager.host, one value for every pod), a TaskManager would be
// refused by the JobManager, which resolves what it registers
// (JobMaster#resolveTaskManagerLocation). The CRD cannot refuse these
// keys (the frozen v1alpha1 schema shares its rule); the validating
// webhook does.
func AddressErrors(fc *v1.FlinkCluster) field.ErrorList {
	conf := field.NewPath("spec", "flinkConfiguration")
	var errs field.ErrorList
	if p, ok := fc.Spec.FlinkConfiguration["taskmanager.network.bind-policy"]; ok && !strings.EqualFold(strings.TrimSpace(string(p)), "ip") {
		errs = append(errs, field.Invalid(conf.Key("taskmanager.network.bind-policy"), string(p),
			`a TaskManager must advertise its IP ("ip", Flink's default): the operator gives TaskManager pods no DNS names, and the JobManager refuses a TaskManager whose address does not resolve`))
	}
	if h, ok := fc.Spec.FlinkConfiguration["taskmanager.host"]; ok {
		errs = append(errs, field.Invalid(conf.Key("taskmanager.host"), string(h),
			"one address for every TaskManager pod: each advertises its own IP when this is unset"))
	}
	return errs
}
