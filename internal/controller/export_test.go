package controller

import "k8s.io/client-go/rest"

// StatusApply is statusApply, for the integration tier's test of what the
// API server accepts.
var StatusApply = statusApply

// NamespaceTerminating is namespaceTerminating, for the integration
// tier's test against the API server's own refusal.
var NamespaceTerminating = namespaceTerminating

// ExampleObject is exampleObject: the FlinkCluster of an example file.
var ExampleObject = exampleObject

// RestConfig is the integration tier's API server (set by its TestMain),
// for the package's own tests of code that talks to one.
var RestConfig *rest.Config
