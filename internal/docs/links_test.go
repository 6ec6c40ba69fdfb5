package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/datapilot/datapilot/internal/testenv"
)

// skipDir names the directories whose Markdown is not the project's own:
// build output, tools' checkouts, the local platform's state.
func skipDir(name string) bool {
	switch name {
	case "bin", "dist", "vendor", "node_modules":
		return true
	}
	return strings.HasPrefix(name, ".") && name != "."
}

// markdownFiles are the repository's Markdown files, relative to root.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// docs parses the repository's Markdown files, by path relative to root.
type docs struct {
	root   string
	parsed map[string]doc
}

func (ds *docs) get(path string) (doc, error) {
	if d, ok := ds.parsed[path]; ok {
		return d, nil
	}
	raw, err := os.ReadFile(filepath.Join(ds.root, filepath.FromSlash(path)))
	if err != nil {
		return doc{}, err
	}
	d := parse(string(raw))
	ds.parsed[path] = d
	return d, nil
}

// check reports what is wrong with one link of the file from, or "".
func (ds *docs) check(from string, l link) string {
	path, anchor, ok := relative(l.dest)
	if !ok {
		return ""
	}
	target := from
	if path != "" {
		if strings.HasPrefix(path, "/") {
			// GitHub resolves a rooted link from the repository's root.
			target = strings.TrimPrefix(path, "/")
		} else {
			target = filepath.ToSlash(filepath.Join(filepath.Dir(from), path))
		}
		if target == ".." || strings.HasPrefix(target, "../") {
			return l.dest + " leaves the repository"
		}
		info, err := os.Stat(filepath.Join(ds.root, filepath.FromSlash(target)))
		if err != nil {
			return l.dest + ": no such file " + target
		}
		if info.IsDir() || !strings.HasSuffix(target, ".md") {
			// Anchors of other files (a line of code, #L12) are GitHub's.
			return ""
		}
	}
	if anchor == "" {
		return ""
	}
	d, err := ds.get(target)
	if err != nil {
		return l.dest + ": " + err.Error()
	}
	if !d.anchors[anchor] {
		return l.dest + ": " + target + " has no heading with anchor #" + anchor
	}
	return ""
}

// TestMarkdownLinks: every relative link in the repository's Markdown
// names a file that exists, and every anchor a heading of its target.
func TestMarkdownLinks(t *testing.T) {
	root := testenv.Root()
	ds := &docs{root: root, parsed: map[string]doc{}}
	files := markdownFiles(t, root)
	for _, must := range []string{"README.md", "docs/architecture.md", "docs/operations/runbook.md"} {
		if !contains(files, must) {
			t.Errorf("%s is missing", must)
		}
	}
	links := 0
	for _, f := range files {
		d, err := ds.get(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range d.links {
			links++
			if problem := ds.check(f, l); problem != "" {
				t.Errorf("%s:%d: dead link %s", f, l.line, problem)
			}
		}
	}
	t.Logf("%d links in %d Markdown files", links, len(files))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var runbookURL = regexp.MustCompile(`runbook_url:\s*"?([^"\s]+)`)

// TestRunbookURLsResolve: each alert's runbook_url in the operator's chart
// names an entry of docs/operations/runbook.md that exists.
func TestRunbookURLsResolve(t *testing.T) {
	root := testenv.Root()
	ds := &docs{root: root, parsed: map[string]doc{}}
	runbook, err := ds.get("docs/operations/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	templates, err := filepath.Glob(filepath.Join(root, "charts", "*", "templates", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range templates {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range runbookURL.FindAllStringSubmatch(string(raw), -1) {
			i := strings.Index(m[1], "runbook.md#")
			if i < 0 {
				t.Errorf("%s: runbook_url %s does not point into docs/operations/runbook.md", f, m[1])
				continue
			}
			anchor := m[1][i+len("runbook.md#"):]
			if strings.Contains(anchor, "{{") {
				// Templated: helm template renders it; the rendered
				// PrometheusRule is checked where it is rendered.
				continue
			}
			if !runbook.anchors[anchor] {
				t.Errorf("%s: runbook_url %s: the runbook has no entry #%s", f, m[1], anchor)
			}
		}
	}
}
