package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/platform/platformtest"
	"github.com/datapilot/datapilot/internal/testwait"
)

// TestChartCRDUpgradePath follows the chart README's upgrade path: a release
// installed with an older CRD (one without spec.upgradePolicy) is upgraded by
// applying charts/datapilot/crds/ server-side and then running helm upgrade;
// afterwards the new field is accepted and existing objects survive. Helm
// alone would leave the old schema in place.
func TestChartCRDUpgradePath(t *testing.T) {
	parallel(t)
	p := platformtest.StartWith(t, platform.Options{BinDir: filepath.Join(root, "bin"), Nodes: 1})
	ctx := context.Background()
	c, err := client.New(p.RESTConfig(), client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "bin", name), append(args, "--kubeconfig", p.KubeconfigPath())...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}

	// The "old" chart: today's chart whose CRD lacks spec.upgradePolicy.
	oldChart := filepath.Join(t.TempDir(), "datapilot")
	if err := os.CopyFS(oldChart, os.DirFS(filepath.Join(root, "charts", "datapilot"))); err != nil {
		t.Fatal(err)
	}
	crdFile := filepath.Join(oldChart, "crds", "data.example.com_flinkclusters.yaml")
	raw, err := os.ReadFile(crdFile)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	for i := range crd.Spec.Versions {
		spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
		delete(spec.Properties, "upgradePolicy")
		// An old schema has no rule about a field it does not know.
		spec.XValidations = slices.DeleteFunc(spec.XValidations, func(r apiextensionsv1.ValidationRule) bool {
			return strings.Contains(r.Rule, "upgradePolicy")
		})
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	if raw, err = yaml.Marshal(crd); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crdFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}

	// The platform already installed the current CRDs; remove them so the
	// release starts from the old ones, as an older install would have.
	if err := c.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd.Name}}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, func() error {
		err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("CRD still there (%v)", err)
	})
	run("helm", "install", "datapilot", oldChart, "--namespace", "datapilot-system", "--create-namespace")
	testwait.Until(t, 30*time.Second, func() error {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
			return err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("CRD not established: %+v", got.Status.Conditions)
	})

	fc := jobCluster("default", "old-schema")
	fc.Spec.Job = nil
	fc.Spec.UpgradePolicy = &v1.UpgradePolicy{StableCheckpoints: 3, AutoRollback: ptr.To(false)}
	if err := c.Create(ctx, fc.DeepCopy(), client.FieldValidation(metav1.FieldValidationStrict)); err == nil || !strings.Contains(err.Error(), "upgradePolicy") {
		t.Fatalf("the old schema accepted spec.upgradePolicy (err %v): the test did not install an old CRD", err)
	}
	existing := jobCluster("default", "existing")
	existing.Spec.Job, existing.Spec.UpgradePolicy = nil, nil
	if err := c.Create(ctx, existing); err != nil {
		t.Fatal(err)
	}

	// The documented path.
	run("kubectl", "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(root, "charts", "datapilot", "crds"))
	run("helm", "upgrade", "datapilot", filepath.Join(root, "charts", "datapilot"), "--namespace", "datapilot-system")
	testwait.Until(t, 30*time.Second, func() error {
		return c.Create(ctx, fc.DeepCopy(), client.FieldValidation(metav1.FieldValidationStrict))
	})
	got := &v1.FlinkCluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "old-schema"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.UpgradePolicy == nil || got.Spec.UpgradePolicy.StableCheckpoints != 3 {
		t.Errorf("spec.upgradePolicy after the upgrade = %+v", got.Spec.UpgradePolicy)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(existing), &v1.FlinkCluster{}); err != nil {
		t.Errorf("an object from before the upgrade is gone: %v", err)
	}
}
