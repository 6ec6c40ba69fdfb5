package docs

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestSlugs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		headings []string
		want     []string
	}{
		{"lower case, spaces to hyphens", []string{"Two commands"}, []string{"two-commands"}},
		{"punctuation dropped", []string{"Jobs, upgrades and rollback"}, []string{"jobs-upgrades-and-rollback"}},
		{"colon and apostrophe", []string{"The autopilot: scaling and healing from the job's own metrics"}, []string{"the-autopilot-scaling-and-healing-from-the-jobs-own-metrics"}},
		{"code spans keep their text", []string{"`spec.job` and `upgradeMode`"}, []string{"specjob-and-upgrademode"}},
		{"hyphens and underscores kept", []string{"High-availability identity", "state_storage"}, []string{"high-availability-identity", "state_storage"}},
		{"every space counts", []string{"A — B", "1.17 / 1.18"}, []string{"a--b", "117--118"}},
		{"links render as their text", []string{"See [the runbook](docs/operations/runbook.md)"}, []string{"see-the-runbook"}},
		{"non-ASCII letters kept", []string{"Überblick über Flink"}, []string{"überblick-über-flink"}},
		{"duplicates numbered", []string{"Reasons", "Reasons", "Reasons"}, []string{"reasons", "reasons-1", "reasons-2"}},
		{"a suffixed slug taken by a heading skips on", []string{"Reasons", "Reasons-1", "Reasons"}, []string{"reasons", "reasons-1", "reasons-2"}},
		{"case-insensitive duplicates", []string{"StateHold", "statehold"}, []string{"statehold", "statehold-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSlugger()
			var got []string
			for _, h := range tc.headings {
				got = append(got, s.slug(h))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("slugs of %q = %q, want %q", tc.headings, got, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name        string
		text        string
		wantAnchors []string
		wantLinks   []string
	}{
		{
			name:        "headings and inline links",
			text:        "# Title\n\nSee [a](a.md#x), ![img](p.png \"t\") and [b](<b c.md>).\n## `restricted` Pod Security ##\n",
			wantAnchors: []string{"title", "restricted-pod-security"},
			wantLinks:   []string{"a.md#x", "p.png", "b c.md"},
		},
		{
			name:        "fenced code is neither heading nor link",
			text:        "```sh\n# not a heading\n[x](nope.md)\n```\n~~~\n[y](nope.md)\n~~~\n# Real\n",
			wantAnchors: []string{"real"},
		},
		{
			name:      "a fence with an info string does not close the block",
			text:      "````md\n```sh\n[x](nope.md)\n````\n[y](yes.md)\n",
			wantLinks: []string{"yes.md"},
		},
		{
			name:      "code spans hide links, even with brackets inside",
			text:      "`[x](nope.md)` and ``a ` [y](nope.md)`` but [`z`](z.md)\n",
			wantLinks: []string{"z.md"},
		},
		{
			name:      "reference definitions, and parentheses inside a destination",
			text:      "[ref]: docs/x.md#y\n[w](https://en.wikipedia.org/wiki/Flink_(software))\n",
			wantLinks: []string{"docs/x.md#y", "https://en.wikipedia.org/wiki/Flink_(software)"},
		},
		{
			name:        "HTML anchors",
			text:        "<a name=\"legacy\"></a>\n<a id=\"other\" href=\"#\">x</a>\n",
			wantAnchors: []string{"legacy", "other"},
		},
		{
			name:        "a hash without a space is no heading",
			text:        "#hashtag\n#### Four\n",
			wantAnchors: []string{"four"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := parse(tc.text)
			anchors := map[string]bool{}
			for _, a := range tc.wantAnchors {
				anchors[a] = true
			}
			if !reflect.DeepEqual(d.anchors, anchors) {
				t.Errorf("anchors = %v, want %v", d.anchors, anchors)
			}
			var links []string
			for _, l := range d.links {
				links = append(links, l.dest)
			}
			if !reflect.DeepEqual(links, tc.wantLinks) {
				t.Errorf("links = %q, want %q", links, tc.wantLinks)
			}
		})
	}
}

func TestRelative(t *testing.T) {
	for _, tc := range []struct {
		dest, path, anchor string
		ok                 bool
	}{
		{"docs/api.md", "docs/api.md", "", true},
		{"#flinkclusterspec", "", "flinkclusterspec", true},
		{"../guide/jobs.md#the-state-rule", "../guide/jobs.md", "the-state-rule", true},
		{"my%20file.md", "my file.md", "", true},
		{"https://kubernetes.io/docs/", "", "", false},
		{"mailto:team@example.com", "", "", false},
		{"//example.com/x", "", "", false},
	} {
		path, anchor, ok := relative(tc.dest)
		if path != tc.path || anchor != tc.anchor || ok != tc.ok {
			t.Errorf("relative(%q) = %q, %q, %v; want %q, %q, %v", tc.dest, path, anchor, ok, tc.path, tc.anchor, tc.ok)
		}
	}
}

// TestCheckReportsDeadLinks: the check fails on a missing file, a missing
// anchor in the same or another file, and passes what exists.
func TestCheckReportsDeadLinks(t *testing.T) {
	root := t.TempDir()
	write(t, root, "README.md", "# Top\n## Same name\n## Same name\n")
	write(t, root, "docs/a.md", "# A page\n")
	write(t, root, "docs/img/p.png", "")
	ds := &docs{root: root, parsed: map[string]doc{}}
	for _, tc := range []struct {
		from, dest string
		dead       bool
	}{
		{"README.md", "docs/a.md", false},
		{"README.md", "docs/a.md#a-page", false},
		{"README.md", "#same-name-1", false},
		{"README.md", "/docs/a.md", false},
		{"docs/a.md", "../README.md#top", false},
		{"docs/a.md", "img/p.png", false},
		{"docs/a.md", "img", false},
		{"README.md", "docs/b.md", true},
		{"README.md", "docs/a.md#nope", true},
		{"README.md", "#same-name-2", true},
		{"docs/a.md", "#top", true},
		{"docs/a.md", "../../outside.md", true},
	} {
		got := ds.check(tc.from, link{dest: tc.dest})
		if (got != "") != tc.dead {
			t.Errorf("check(%s → %s) = %q, want dead=%v", tc.from, tc.dest, got, tc.dead)
		}
	}
}

func write(t *testing.T, root, path, text string) {
	t.Helper()
	full := filepath.Join(root, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
