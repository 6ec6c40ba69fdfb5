// Package v1 holds the data.example.com/v1 API: FlinkCluster. v1 is the hub
// and storage version.
//
// +kubebuilder:object:generate=true
// +groupName=data.example.com
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "data.example.com", Version: "v1"}

	// SchemeBuilder registers the types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
