package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/sqlgateway"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=list;watch;create;patch

// sqlChildren is the NetworkPolicy in front of the JobManager pods' SQL
// Gateway, for a cluster with a SQL job.
func (r *Reconciler) sqlChildren(s *scope) []child {
	p := s.desired.SQLGatewayPolicy
	if p == nil {
		return nil
	}
	return []child{{kind: "NetworkPolicy", name: *p.Name, hash: specHash(p.Annotations), cached: metadataOnly("networking.k8s.io/v1", "NetworkPolicy"), desired: p}}
}

// resolveScript reads a SQL job's script (inline, or its ConfigMap key)
// and the values of its secret placeholders. The values are for the
// statements sent to the gateway only.
func (r *Reconciler) resolveScript(ctx context.Context, namespace string, sql *v1.SQLJobSpec) (string, map[string]string, error) {
	script := sql.Script
	if ref := sql.ConfigMapRef; ref != nil {
		cm := &corev1.ConfigMap{}
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, cm); err != nil {
			return "", nil, fmt.Errorf("read the SQL script from ConfigMap %s: %w", ref.Name, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			return "", nil, fmt.Errorf("ConfigMap %s has no key %s for the SQL script", ref.Name, ref.Key)
		}
		script = v
	}
	secrets := map[string]string{}
	for _, ref := range sql.SecretRefs {
		sec := &corev1.Secret{}
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.SecretKeyRef.Name}, sec); err != nil {
			return "", nil, fmt.Errorf("read Secret %s for the SQL placeholder %s: %w", ref.SecretKeyRef.Name, ref.Placeholder, err)
		}
		v, ok := sec.Data[ref.SecretKeyRef.Key]
		if !ok {
			return "", nil, fmt.Errorf("Secret %s has no key %s for the SQL placeholder %s", ref.SecretKeyRef.Name, ref.SecretKeyRef.Key, ref.Placeholder)
		}
		secrets[ref.Placeholder] = string(v)
	}
	for _, p := range sqlgateway.Placeholders(script) {
		if _, ok := secrets[p]; !ok {
			return "", nil, fmt.Errorf("the SQL script uses ${%s}, which spec.job.sql.secretRefs does not name", p)
		}
	}
	return script, secrets, nil
}

// inlineScript is the spec with its SQL script resolved into
// spec.job.sql.script: what the lifecycle compares, records as deployed
// and stable, and what a rollback submits again, even after the ConfigMap
// changed. Placeholders stay placeholders.
func inlineScript(spec *v1.FlinkClusterSpec, script string) *v1.FlinkClusterSpec {
	out := spec.DeepCopy()
	out.Job.SQL.Script, out.Job.SQL.ConfigMapRef = script, nil
	return out
}

// sqlPlanMemory remembers what the gateway said of each script a cluster
// was asked to run, so a refused script is planned once, not on every
// reconcile.
type sqlPlanMemory struct {
	mu sync.Mutex
	m  map[types.NamespacedName]sqlPlanned
}

type sqlPlanned struct {
	hash    string
	refusal string
}

func (m *sqlPlanMemory) get(k types.NamespacedName, hash string) (sqlPlanned, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.m[k]
	return p, ok && p.hash == hash
}

func (m *sqlPlanMemory) put(k types.NamespacedName, p sqlPlanned) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[types.NamespacedName]sqlPlanned{}
	}
	m.m[k] = p
}

func scriptHash(script string, secrets map[string]string) string {
	h := sha256.New()
	h.Write([]byte(script))
	keys := make([]string, 0, len(secrets))
	for k := range secrets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h.Write([]byte("\x00" + k + "\x00" + secrets[k]))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// sqlGate is what a SQL job's spec must pass before the lifecycle decides
// on it: the script is resolved and inlined, and a script other than the
// deployed one must first be planned by the gateway (EXPLAIN). A refused
// script, or one the gateway cannot plan yet, keeps the deployed spec: no
// savepoint is taken and the running job keeps running. The verdict is
// nil for a cluster without a SQL job.
func (r *Reconciler) sqlGate(ctx context.Context, fc *v1.FlinkCluster, spec, deployed *v1.FlinkClusterSpec) (*v1.FlinkClusterSpec, *verdict) {
	if spec.Job == nil || spec.Job.SQL == nil {
		return spec, nil
	}
	script, secrets, err := r.resolveScript(ctx, fc.Namespace, spec.Job.SQL)
	if err != nil {
		v := &verdict{status: metav1.ConditionFalse, reason: "ScriptUnavailable", message: err.Error()}
		if deployed != nil && deployed.Job != nil {
			return deployed, v
		}
		return spec, v
	}
	resolved := inlineScript(spec, script)
	if deployed == nil || deployed.Job == nil || deployed.Job.SQL == nil ||
		deployed.Job.SQL.Script == script && sameSecretRefs(deployed.Job.SQL.SecretRefs, spec.Job.SQL.SecretRefs) {
		// The first deployment plans at submission; the deployed script
		// (in an upgrade, its target) was planned before it was deployed.
		return resolved, &verdict{status: metav1.ConditionTrue, reason: "ScriptPlanned", message: "The SQL script in effect planned"}
	}
	key := types.NamespacedName{Namespace: fc.Namespace, Name: fc.Name}
	hash := scriptHash(script, secrets)
	p, known := r.sqlPlans.get(key, hash)
	if !known {
		refusal, err := r.explain(ctx, fc, spec.Version, script, secrets)
		if err != nil {
			log.FromContext(ctx).Info("The SQL Gateway cannot plan the new script yet; the running job keeps running", "flinkcluster", klog.KObj(fc), "reason", err.Error())
			return deployed, &verdict{status: metav1.ConditionUnknown, reason: "GatewayUnavailable", message: "Waiting for the SQL Gateway to plan the new script before the upgrade: " + sqlgateway.Redact(err.Error(), secrets)}
		}
		p = sqlPlanned{hash: hash, refusal: refusal}
		r.sqlPlans.put(key, p)
		if refusal != "" {
			r.Recorder.Eventf(fc, nil, corev1.EventTypeWarning, "SQLScriptRefused", "Plan", "Flink refused the new SQL script; the running job keeps running: %s", refusal)
		}
	}
	if p.refusal != "" {
		return deployed, &verdict{status: metav1.ConditionFalse, reason: "ScriptRefused", message: "Flink refused the new SQL script; the running job keeps running: " + p.refusal}
	}
	return resolved, &verdict{status: metav1.ConditionTrue, reason: "ScriptPlanned", message: "The new SQL script planned"}
}

func sameSecretRefs(a, b []v1.SQLSecretRef) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// explain has the gateway plan a script: "" when it planned, Flink's
// message (secrets redacted) when it refused; an error when the gateway
// could not answer.
func (r *Reconciler) explain(ctx context.Context, fc *v1.FlinkCluster, version, script string, secrets map[string]string) (string, error) {
	c, err := r.gatewayClient(ctx, fc)
	if err != nil {
		return "", err
	}
	_, err = c.Explain(ctx, nil, substituteAll(sqlgateway.Split(script), secrets))
	if sqlgateway.IsRefused(err) {
		return sqlgateway.Redact(err.Error(), secrets), nil
	}
	return "", err
}

func substituteAll(stmts []string, secrets map[string]string) []string {
	out := make([]string, len(stmts))
	for i, s := range stmts {
		out[i] = sqlgateway.Substitute(s, secrets)
	}
	return out
}

// gatewayClient reaches the SQL Gateway of a Ready JobManager pod.
func (r *Reconciler) gatewayClient(ctx context.Context, fc *v1.FlinkCluster) (*sqlgateway.Client, error) {
	pod, err := r.jobManagerPod(ctx, fc)
	if err != nil {
		return nil, err
	}
	return sqlgateway.New(r.Resolver.SQLGatewayURL(fc.Namespace, fc.Name, pod.Name, string(pod.UID), pod.Status.PodIP, resources.PortSQLGateway), r.HTTPClient), nil
}

// submitSQL runs a SQL job's script through the gateway under the
// recorded job ID: the script's statements, then, before its INSERT, the
// settings that make the submission the operator's (SET after the user's,
// so they win): $internal.pipeline.job-id (PipelineOptionsInternal.
// PIPELINE_FIXED_JOB_ID, which PipelineExecutorUtils applies to the job
// graph, so a resubmission is refused as a duplicate instead of running
// twice), the restore path, NO_CLAIM and allowNonRestoredState in the keys
// the version reads, and the parallelism. Secrets are substituted only in
// the statements sent; Flink's refusals are redacted before they travel.
func (r *Reconciler) submitSQL(ctx context.Context, fc *v1.FlinkCluster, spec *v1.JobSpec, v flink.Version, jobID, restorePath string) error {
	script, secrets, err := r.resolveScript(ctx, fc.Namespace, spec.SQL)
	if err != nil {
		return err
	}
	stmts := sqlgateway.Split(script)
	if len(stmts) == 0 {
		return fmt.Errorf("the SQL script has no statement")
	}
	c, err := r.gatewayClient(ctx, fc)
	if err != nil {
		return err
	}
	sets := submissionSettings(v, spec, jobID, restorePath)
	last := len(stmts) - 1
	all := append(append(append([]string{}, stmts[:last]...), sets...), stmts[last])
	got, err := c.Submit(ctx, nil, substituteAll(all, secrets))
	if err != nil {
		// A lost answer may have submitted it: the ID is new and ours.
		if _, getErr := r.flinkClient(fc).Job(ctx, jobID); getErr == nil {
			return nil
		}
		return fmt.Errorf("submit SQL job %s: %s", jobID, sqlgateway.Redact(err.Error(), secrets))
	}
	if got != jobID {
		return fmt.Errorf("the SQL Gateway submitted job %s, not the fixed ID %s: $internal.pipeline.job-id was not honoured", got, jobID)
	}
	r.Metrics.Submissions.Inc()
	return nil
}

// submissionSettings are the SET statements of a submission.
func submissionSettings(v flink.Version, spec *v1.JobSpec, jobID, restorePath string) []string {
	pathKey, modeKey, ignoreKey := "execution.savepoint.path", "execution.savepoint-restore-mode", "execution.savepoint.ignore-unclaimed-state"
	if v.AtLeast(1, 20) {
		pathKey, modeKey, ignoreKey = "execution.state-recovery.path", "execution.state-recovery.claim-mode", "execution.state-recovery.ignore-unclaimed-state"
	}
	set := func(k, val string) string {
		return fmt.Sprintf("SET '%s' = '%s'", k, strings.ReplaceAll(val, "'", "''"))
	}
	out := []string{set("$internal.pipeline.job-id", jobID), set(modeKey, string(flink.RestoreNoClaim)),
		set(ignoreKey, fmt.Sprint(spec.AllowNonRestoredState))}
	if restorePath != "" {
		out = append(out, set(pathKey, restorePath))
	} else {
		out = append(out, "RESET '"+pathKey+"'")
	}
	if spec.Parallelism > 0 {
		out = append(out, set("parallelism.default", fmt.Sprint(spec.Parallelism)))
	}
	return out
}
