package chartcheck

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Sync makes every vendored copy under root (the charts/ directory) an exact
// copy of its source.
func Sync(root string) error {
	for _, c := range Copies {
		to := filepath.Join(root, c.To)
		if err := os.RemoveAll(to); err != nil {
			return err
		}
		if err := copyTree(filepath.Join(root, c.From), to); err != nil {
			return fmt.Errorf("copy %s to %s: %w", c.From, c.To, err)
		}
	}
	return nil
}

// CheckCopies lists every difference between the vendored copies and their
// sources.
func CheckCopies(root string) []error {
	var errs []error
	for _, c := range Copies {
		from, err := tree(filepath.Join(root, c.From))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		to, err := tree(filepath.Join(root, c.To))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (run hack/flinkcharts sync)", c.To, err))
			continue
		}
		for _, name := range union(from, to) {
			a, inFrom := from[name]
			b, inTo := to[name]
			switch {
			case !inTo:
				errs = append(errs, fmt.Errorf("%s/%s is missing from %s: run 'go run ./hack/flinkcharts sync'", c.From, name, c.To))
			case !inFrom:
				errs = append(errs, fmt.Errorf("%s/%s is not in %s: run 'go run ./hack/flinkcharts sync'", c.To, name, c.From))
			case !bytes.Equal(a, b):
				errs = append(errs, fmt.Errorf("%s/%s differs from %s/%s: run 'go run ./hack/flinkcharts sync'", c.To, name, c.From, name))
			}
		}
	}
	return errs
}

// tree reads every regular file under dir, by path relative to it.
func tree(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = raw
		return nil
	})
	return files, err
}

func copyTree(from, to string) error {
	files, err := tree(from)
	if err != nil {
		return err
	}
	for name, raw := range files {
		dst := filepath.Join(to, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, raw, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func union(a, b map[string][]byte) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string][]byte{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
