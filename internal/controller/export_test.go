package controller

// StatusApply is statusApply, for the integration tier's test of what the
// API server accepts.
var StatusApply = statusApply

// NamespaceTerminating is namespaceTerminating, for the integration
// tier's test against the API server's own refusal.
var NamespaceTerminating = namespaceTerminating

// ExampleObject is exampleObject: the FlinkCluster of an example file.
var ExampleObject = exampleObject
