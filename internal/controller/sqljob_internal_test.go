package controller

import (
	"strings"
	"testing"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
)

// The operator's SETs name the keys the minor reads: execution.savepoint.*
// before 1.20, execution.state-recovery.* from 1.20; a submission without
// a restore path resets any path the script set.
func TestSubmissionSettings(t *testing.T) {
	for _, c := range []struct {
		version, restore string
		spec             v1.JobSpec
		want             []string
	}{
		{"1.19.1", "s3://b/sp-1", v1.JobSpec{Parallelism: 3}, []string{
			"SET '$internal.pipeline.job-id' = 'abc'", "SET 'execution.savepoint-restore-mode' = 'NO_CLAIM'",
			"SET 'execution.savepoint.ignore-unclaimed-state' = 'false'", "SET 'execution.savepoint.path' = 's3://b/sp-1'",
			"SET 'parallelism.default' = '3'"}},
		{"1.20.1", "", v1.JobSpec{AllowNonRestoredState: true}, []string{
			"SET '$internal.pipeline.job-id' = 'abc'", "SET 'execution.state-recovery.claim-mode' = 'NO_CLAIM'",
			"SET 'execution.state-recovery.ignore-unclaimed-state' = 'true'", "RESET 'execution.state-recovery.path'"}},
		{"2.0.0", "s3://b/it's", v1.JobSpec{}, []string{
			"SET '$internal.pipeline.job-id' = 'abc'", "SET 'execution.state-recovery.claim-mode' = 'NO_CLAIM'",
			"SET 'execution.state-recovery.ignore-unclaimed-state' = 'false'", "SET 'execution.state-recovery.path' = 's3://b/it''s'"}},
	} {
		v, err := flink.ParseVersion(c.version)
		if err != nil {
			t.Fatal(err)
		}
		spec := c.spec
		if got := submissionSettings(v, &spec, "abc", c.restore); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: %q, want %q", c.version, got, c.want)
		}
	}
}

// The deployed and stable specs carry the script itself, so a rollback
// runs the script that ran, whatever the ConfigMap holds by then.
func TestInlineScript(t *testing.T) {
	spec := &v1.FlinkClusterSpec{Job: &v1.JobSpec{SQL: &v1.SQLJobSpec{ConfigMapRef: &v1.ConfigMapKeyRef{Name: "sql", Key: "job.sql"}}}}
	got := inlineScript(spec, "INSERT INTO t SELECT * FROM s")
	if got.Job.SQL.ConfigMapRef != nil || got.Job.SQL.Script != "INSERT INTO t SELECT * FROM s" || spec.Job.SQL.ConfigMapRef == nil {
		t.Fatalf("inlineScript: %+v (input %+v)", got.Job.SQL, spec.Job.SQL)
	}
}
