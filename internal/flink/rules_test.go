package flink

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestCRDCarriesTheGeneratedRules holds the CRD's admission rules, in
// every served version, to the functions built from SupportedMinors,
// OwnedKeys, RestoreKeys and the legacy file format, so the list is kept in one place.
// On a failure, paste the printed marker into api/v1 (and v1alpha1) and
// run make generate.
func TestCRDCarriesTheGeneratedRules(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "data.example.com_flinkclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
		for _, want := range []struct {
			where  string
			rules  apiextensionsv1.ValidationRules
			rule   string
			msgExp string
		}{
			{"spec.version", spec.Properties["version"].XValidations, SupportedVersionRule(), ""},
			{"spec.flinkConfiguration", spec.Properties["flinkConfiguration"].XValidations, OwnedKeysRule(), OwnedKeysMessage()},
			{"spec.flinkConfiguration", spec.Properties["flinkConfiguration"].XValidations, RestoreKeysRule(), RestoreKeysMessage()},
			{"spec", spec.XValidations, LegacyFileRule(), LegacyFileMessage()},
		} {
			found := false
			for _, r := range want.rules {
				if r.Rule == want.rule && (want.msgExp == "" || r.MessageExpression == want.msgExp) {
					found = true
				}
			}
			if !found {
				marker := fmt.Sprintf("// +kubebuilder:validation:XValidation:rule=%q", want.rule)
				if want.msgExp != "" {
					marker += fmt.Sprintf(",messageExpression=%q", want.msgExp)
				}
				t.Errorf("%s %s lacks the generated rule; its marker is:\n%s", v.Name, want.where, marker)
			}
		}
	}
}

// TestSupportedVersionRule checks the rule's regular expression (RE2, as
// in CEL's matches) admits exactly the supported minors' versions.
func TestSupportedVersionRule(t *testing.T) {
	rule := SupportedVersionRule()
	pattern := strings.TrimSuffix(strings.TrimPrefix(rule, "self.matches('"), "')")
	re := regexp.MustCompile(pattern)
	for major := 0; major <= 3; major++ {
		for minor := 0; minor <= 30; minor++ {
			v := Version{major, minor, 3}
			if got, want := re.MatchString(v.String()), Supported(v); got != want {
				t.Errorf("%s: rule admits %v, supported %v", v, got, want)
			}
		}
	}
	for _, bad := range []string{"1.17", "1.17.1-rc1", "x1.17.1", "1.170.1", "11.17.1"} {
		if re.MatchString(bad) {
			t.Errorf("rule admits %q", bad)
		}
	}
	if got := SupportedRange(); got != "1.17 to 2.2" {
		t.Errorf("SupportedRange() = %q", got)
	}
}

// TestLegacyVersions: the legacy rule applies to exactly the minors whose
// file is flink-conf.yaml.
func TestLegacyVersions(t *testing.T) {
	re := regexp.MustCompile(legacyVersions())
	for _, m := range SupportedMinors {
		v := Version{m.Major, m.Minor, 1}
		if got, want := re.MatchString(v.String()), !KeysFor(v).YAML; got != want {
			t.Errorf("%s: legacy rule applies %v, reads flink-conf.yaml %v", v, got, want)
		}
	}
}
