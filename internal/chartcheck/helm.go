package chartcheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Helm runs one helm binary with its caches under a directory of its own,
// so a check neither reads nor writes the user's helm configuration.
type Helm struct {
	Bin  string
	Home string
}

// Run runs helm and returns its standard output.
func (h Helm) Run(args ...string) (string, error) {
	cmd := exec.Command(h.Bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(h.Home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(h.Home, "config"),
		"HELM_DATA_HOME="+filepath.Join(h.Home, "data"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %v: %w\n%s", args, err, errOut.String())
	}
	return out.String(), nil
}

// Check runs every check on the charts under root (the charts/ directory)
// and joins what failed.
func Check(h Helm, root string) error {
	errs := CheckCopies(root)

	var metas []Metadata
	for _, c := range Charts {
		raw, err := os.ReadFile(filepath.Join(root, c, "Chart.yaml"))
		if err != nil {
			return err
		}
		m, err := ParseMetadata(raw)
		if err != nil {
			return fmt.Errorf("%s/Chart.yaml: %w", c, err)
		}
		metas = append(metas, m)
	}
	jm := filepath.Join(root, "flink-jobmanager")
	renders := []Rendered{}
	valueSets := [][]string{nil}
	names := []string{"flink-jobmanager defaults"}
	for _, env := range Environments {
		valueSets = append(valueSets, []string{"--values", filepath.Join(jm, "values-"+env+".yaml")})
		names = append(names, "flink-jobmanager values-"+env+".yaml")
	}
	for i, vals := range valueSets {
		out, err := h.Run(append([]string{"template", "flink-check", jm}, vals...)...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", names[i], err))
			continue
		}
		renders = append(renders, Rendered{Name: names[i], Manifest: out})
	}
	version, verrs := Versions(metas, renders)
	errs = append(errs, verrs...)

	for _, c := range Charts {
		pins, ok := Pins[c]
		if !ok {
			continue
		}
		out, err := h.Run("dependency", "list", filepath.Join(root, c))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		deps, err := ParseDependencyList(out)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c, err))
			continue
		}
		errs = append(errs, Dependencies(c, version, deps, pins)...)
	}
	return errors.Join(errs...)
}
