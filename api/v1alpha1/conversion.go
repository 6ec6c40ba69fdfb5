package v1alpha1

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/conversion"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// v1alpha1 is a spoke of the v1 hub. The two shapes differ in one place:
//
//	v1alpha1  spec.kafka.bootstrapServers: "a:9092,b:9092"
//	v1        spec.kafka.bootstrap.servers: "a:9092,b:9092"
//
// Every other field has the same type in both versions, and status is v1's
// own type, so both directions are exact and a round trip in either order
// gives back the object it started from. No field exists only in v1 today,
// so nothing has to be carried in an annotation. A field added to v1 alone
// must be carried across a v1 -> v1alpha1 -> v1 round trip in an annotation
// on the v1alpha1 object (restored by ConvertTo); the randomised round-trip
// test in conversion_test.go fails until that is done.

var _ conversion.Convertible = &FlinkCluster{}

// ConvertTo converts this v1alpha1 FlinkCluster to the v1 hub.
func (src *FlinkCluster) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*v1.FlinkCluster)
	if !ok {
		return fmt.Errorf("converting FlinkCluster v1alpha1 to %T: want *v1.FlinkCluster", dstRaw)
	}
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	s := src.Spec.DeepCopy()
	dst.Spec = v1.FlinkClusterSpec{
		Version:            s.Version,
		Image:              s.Image,
		ImagePullPolicy:    s.ImagePullPolicy,
		ServiceAccountName: s.ServiceAccountName,
		JobManager:         s.JobManager,
		TaskManager:        s.TaskManager,
		Storage:            s.Storage,
		HighAvailability:   s.HighAvailability,
		Checkpointing:      s.Checkpointing,
		Job:                s.Job,
		UpgradePolicy:      s.UpgradePolicy,
		Health:             s.Health,
		Autoscaler:         s.Autoscaler,
		Healing:            s.Healing,
		FlinkConfiguration: s.FlinkConfiguration,
	}
	if k := s.Kafka; k != nil {
		dst.Spec.Kafka = &v1.KafkaSpec{
			Bootstrap: v1.KafkaBootstrap{Servers: k.BootstrapServers},
			TLS:       k.TLS,
			SASL:      k.SASL,
		}
	}
	dst.Status = *src.Status.DeepCopy()
	return nil
}

// ConvertFrom converts the v1 hub to this v1alpha1 FlinkCluster.
func (dst *FlinkCluster) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*v1.FlinkCluster)
	if !ok {
		return fmt.Errorf("converting %T to FlinkCluster v1alpha1: want *v1.FlinkCluster", srcRaw)
	}
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	s := src.Spec.DeepCopy()
	dst.Spec = FlinkClusterSpec{
		Version:            s.Version,
		Image:              s.Image,
		ImagePullPolicy:    s.ImagePullPolicy,
		ServiceAccountName: s.ServiceAccountName,
		JobManager:         s.JobManager,
		TaskManager:        s.TaskManager,
		Storage:            s.Storage,
		HighAvailability:   s.HighAvailability,
		Checkpointing:      s.Checkpointing,
		Job:                s.Job,
		UpgradePolicy:      s.UpgradePolicy,
		Health:             s.Health,
		Autoscaler:         s.Autoscaler,
		Healing:            s.Healing,
		FlinkConfiguration: s.FlinkConfiguration,
	}
	if k := s.Kafka; k != nil {
		dst.Spec.Kafka = &KafkaSpec{
			BootstrapServers: k.Bootstrap.Servers,
			TLS:              k.TLS,
			SASL:             k.SASL,
		}
	}
	dst.Status = *src.Status.DeepCopy()
	return nil
}
