package v1

// Hub marks v1 as the conversion hub: every other version of FlinkCluster
// converts to and from v1 (sigs.k8s.io/controller-runtime/pkg/conversion).
func (*FlinkCluster) Hub() {}
