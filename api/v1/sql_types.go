package v1

// SQLJobSpec is a Flink SQL job: a script of DDL (SET, CREATE TABLE,
// CREATE TEMPORARY VIEW, ...) and one INSERT INTO or one EXECUTE STATEMENT
// SET, inline or in a ConfigMap, exactly one.
// +kubebuilder:validation:XValidation:rule="has(self.script) != has(self.configMapRef)",message="spec.job.sql needs exactly one of script and configMapRef"
type SQLJobSpec struct {
	// Script is the SQL script, statements separated by ';'.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Script string `json:"script,omitempty"`

	// ConfigMapRef names the ConfigMap key that holds the script; a change
	// of its content is an upgrade, as a change of spec.job.sql.script is.
	// +optional
	ConfigMapRef *ConfigMapKeyRef `json:"configMapRef,omitempty"`

	// SecretRefs are the secrets the script's connector options need. The
	// script names each as ${placeholder}; the operator substitutes the
	// Secret's value only in the statement it sends to the SQL Gateway,
	// never in a ConfigMap, an event, a condition or a log.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=placeholder
	SecretRefs []SQLSecretRef `json:"secretRefs,omitempty"`
}

// ConfigMapKeyRef is one key of a ConfigMap in the cluster's namespace.
type ConfigMapKeyRef struct {
	// Name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// Key in its data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// SQLSecretRef maps a placeholder of the script to a Secret key.
type SQLSecretRef struct {
	// Placeholder is the name the script writes as ${placeholder}.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Placeholder string `json:"placeholder"`
	// SecretKeyRef is the Secret (in the cluster's namespace) and key
	// whose value replaces it.
	SecretKeyRef SecretKeyRef `json:"secretKeyRef"`
}

// SecretKeyRef is one key of a Secret in the cluster's namespace.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// Key in its data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// ConditionSQLScriptPlanned, for a SQL job, is True when the script the
// cluster should run was planned by Flink's SQL Gateway (EXPLAIN), False
// with the planner's message when Flink refused it: the upgrade to it does
// not start and the running job keeps running.
const ConditionSQLScriptPlanned = "SQLScriptPlanned"
