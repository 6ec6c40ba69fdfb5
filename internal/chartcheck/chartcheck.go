// Package chartcheck holds the build checks of the Flink environment charts
// (charts/flink-base, flink-taskmanager, flink-jobmanager): the vendored
// copies are in step with their sources, `helm dependency list` shows the
// pinned versions, and every chart's version and appVersion, the image tag
// and the rendered FlinkCluster's spec.version are the one Flink version.
// The checks are pure functions over what helm printed; helm.go runs helm.
package chartcheck

import (
	"bufio"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Charts are the Flink environment charts, each a directory under charts/.
var Charts = []string{"flink-base", "flink-taskmanager", "flink-jobmanager"}

// Environments are the values files flink-jobmanager ships
// (values-<env>.yaml), rendered by every check besides its defaults.
var Environments = []string{"dev", "staging", "prod"}

// Pins are the dependency versions each chart is built against; the Flink
// charts among them must be at the Flink version (checked in Versions).
var Pins = map[string]map[string]string{
	"flink-taskmanager": {"flink-base": ""},
	"flink-jobmanager":  {"flink-base": "", "flink-taskmanager": "", "zookeeper": "1.0.0", "kafka": "2.8.0"},
}

// Copy is a chart vendored into another's charts/ directory: helm installs
// a chart directory with its dependencies in place, and no repository is
// reachable, so the copy is the dependency.
type Copy struct{ From, To string }

// Copies in the order Sync makes them: flink-taskmanager's own copy of
// flink-base first, since flink-jobmanager vendors flink-taskmanager whole.
var Copies = []Copy{
	{"flink-base", "flink-taskmanager/charts/flink-base"},
	{"flink-base", "flink-jobmanager/charts/flink-base"},
	{"flink-taskmanager", "flink-jobmanager/charts/flink-taskmanager"},
}

// Dependency is one row of `helm dependency list`.
type Dependency struct{ Name, Version, Repository, Status string }

// ParseDependencyList reads the table `helm dependency list` prints.
func ParseDependencyList(out string) ([]Dependency, error) {
	var deps []Dependency
	sc := bufio.NewScanner(strings.NewReader(out))
	header := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if strings.HasPrefix(line, "WARNING: no dependencies") {
			return nil, nil
		}
		if !header {
			if len(f) < 4 || f[0] != "NAME" || f[1] != "VERSION" || f[3] != "STATUS" {
				return nil, fmt.Errorf("unexpected helm dependency list header %q", line)
			}
			header = true
			continue
		}
		if len(f) != 4 {
			return nil, fmt.Errorf("unexpected helm dependency list row %q", line)
		}
		deps = append(deps, Dependency{Name: f[0], Version: f[1], Repository: f[2], Status: f[3]})
	}
	return deps, nil
}

// Dependencies checks one chart's `helm dependency list` against its pins:
// each pinned dependency listed at its version (an empty pin means the
// Flink version) and present in charts/ at that version ("ok" for an
// archive, "unpacked" for a directory; helm says "wrong version" or
// "missing" otherwise), and nothing unpinned.
func Dependencies(chart, flinkVersion string, deps []Dependency, pins map[string]string) []error {
	var errs []error
	seen := map[string]bool{}
	for _, d := range deps {
		seen[d.Name] = true
		want, pinned := pins[d.Name]
		if !pinned {
			errs = append(errs, fmt.Errorf("%s: dependency %s %s is not pinned in chartcheck.Pins", chart, d.Name, d.Version))
			continue
		}
		if want == "" {
			want = flinkVersion
		}
		if d.Version != want {
			errs = append(errs, fmt.Errorf("%s: helm dependency list has %s %s, pinned %s", chart, d.Name, d.Version, want))
		}
		if d.Status != "ok" && d.Status != "unpacked" {
			errs = append(errs, fmt.Errorf("%s: helm dependency list says %s %s is %q: charts/ must hold it at the pinned version", chart, d.Name, d.Version, d.Status))
		}
	}
	for name := range pins {
		if !seen[name] {
			errs = append(errs, fmt.Errorf("%s: pinned dependency %s is not in Chart.yaml", chart, name))
		}
	}
	return errs
}

// Metadata is what Versions reads of a Chart.yaml.
type Metadata struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
}

// ParseMetadata reads a Chart.yaml.
func ParseMetadata(raw []byte) (Metadata, error) {
	var m Metadata
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return m, err
	}
	return m, nil
}

// Rendered is one `helm template` of flink-jobmanager.
type Rendered struct {
	// Name says which values were rendered (defaults, values-prod.yaml).
	Name     string
	Manifest string
}

// Versions checks that the Flink charts are bound to one Flink version:
// each chart's version and appVersion equal, the same for every chart, and
// every rendering's FlinkCluster with that spec.version and an image tagged
// with it (the tag itself or a variant of it, such as 1.17.1-java11). It
// returns that version for Dependencies.
func Versions(charts []Metadata, renders []Rendered) (string, []error) {
	var errs []error
	var want string
	for _, c := range charts {
		if c.Version != c.AppVersion {
			errs = append(errs, fmt.Errorf("%s: Chart.yaml version %s and appVersion %s differ: both are the Flink version", c.Name, c.Version, c.AppVersion))
		}
		if want == "" {
			want = c.AppVersion
		} else if c.AppVersion != want {
			errs = append(errs, fmt.Errorf("%s: appVersion %s, but %s has %s: the Flink charts are released together, at one Flink version", c.Name, c.AppVersion, charts[0].Name, want))
		}
	}
	for _, r := range renders {
		clusters, err := flinkClusters(r.Manifest)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Name, err))
			continue
		}
		if len(clusters) != 1 {
			errs = append(errs, fmt.Errorf("%s: rendered %d FlinkClusters, want 1", r.Name, len(clusters)))
			continue
		}
		fc := clusters[0]
		if fc.Spec.Version != want {
			errs = append(errs, fmt.Errorf("%s: the FlinkCluster's spec.version is %q, the charts' appVersion %q", r.Name, fc.Spec.Version, want))
		}
		if tag := imageTag(fc.Spec.Image); tag != want && !strings.HasPrefix(tag, want+"-") {
			errs = append(errs, fmt.Errorf("%s: the FlinkCluster's image %q is tagged %q, the charts' appVersion is %q", r.Name, fc.Spec.Image, tag, want))
		}
	}
	return want, errs
}

type flinkCluster struct {
	Kind string `json:"kind"`
	Spec struct {
		Version string `json:"version"`
		Image   string `json:"image"`
	} `json:"spec"`
}

func flinkClusters(manifest string) ([]flinkCluster, error) {
	var out []flinkCluster
	for _, doc := range strings.Split(manifest, "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var fc flinkCluster
		if err := yaml.Unmarshal([]byte(doc), &fc); err != nil {
			return nil, fmt.Errorf("rendered manifest does not parse: %w", err)
		}
		if fc.Kind == "FlinkCluster" {
			out = append(out, fc)
		}
	}
	return out, nil
}

// imageTag is the tag of an image reference (registry:port/repo:tag),
// empty without one; a digest reference has no tag to compare.
func imageTag(image string) string {
	image, _, _ = strings.Cut(image, "@")
	slash := strings.LastIndex(image, "/")
	colon := strings.LastIndex(image, ":")
	if colon < 0 || colon < slash {
		return ""
	}
	return image[colon+1:]
}
