// Package v1alpha1 holds the older data.example.com/v1alpha1 API of
// FlinkCluster. It is still served, so objects and manifests written against
// it keep working; it is not stored: the API server keeps every object as v1
// and the operator's conversion webhook translates between the two (see
// conversion.go). New fields go into v1 only.
//
// +kubebuilder:object:generate=true
// +groupName=data.example.com
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "data.example.com", Version: "v1alpha1"}

	// SchemeBuilder registers the types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
