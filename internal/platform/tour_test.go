package platform

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestTourReadsTheTourSectionsShellBlocks(t *testing.T) {
	readme := "# Top\n\n```sh\nmake run\n```\n\n" + TourHeading + "\n\n`make run` starts it. In another terminal:\n\n" +
		"```sh\nexport KUBECONFIG=x\n```\n\n" +
		"**A step.** Its text,\non two lines.\n\n```sh\na\nb |\n  c\n```\n\n" +
		"A paragraph without a title.\n\n**Bold before yaml.**\n\n```yaml\n## not a heading\n```\n\n" +
		"**Long\ntitle.** Text.\n\n```sh\nd \\\n  --e\n```\n\n## Next\n\n```sh\nnot the tour\n```\n"
	want := []TourStep{
		{Title: "", Lines: []string{"export KUBECONFIG=x"}},
		{Title: "A step.", Lines: []string{"a", "b |", "  c"}},
		{Title: "Long title.", Lines: []string{"d \\", "  --e"}},
	}
	got := Tour(readme)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Tour:\n got %#v\nwant %#v", got, want)
	}
	for _, c := range []struct {
		step int
		want []string
	}{
		{0, []string{"export KUBECONFIG=x"}},
		{1, []string{"a", "b |\n  c"}},
		{2, []string{"d \\\n  --e"}},
	} {
		if got := got[c.step].Commands(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("step %d: Commands() = %q, want %q", c.step, got, c.want)
		}
	}
}

func TestCommandsJoinContinuedLines(t *testing.T) {
	for _, c := range []struct {
		name  string
		lines []string
		want  []string
	}{
		{"one a line", []string{"a", "", "b"}, []string{"a", "b"}},
		{"pipe", []string{"sed x f |", "  kubectl y", "z"}, []string{"sed x f |\n  kubectl y", "z"}},
		{"backslash", []string{"helm a \\", "  --set b", "c"}, []string{"helm a \\\n  --set b", "c"}},
		{"open single quote", []string{"curl -d '{", `  "a": "b"}'`, "c"}, []string{"curl -d '{\n  \"a\": \"b\"}'", "c"}},
		{"open double quote", []string{`echo "a`, `b \" c"`, "d"}, []string{"echo \"a\nb \\\" c\"", "d"}},
		{"quote in a comment", []string{"kubectl get x   # the job's state", "y"}, []string{"kubectl get x   # the job's state", "y"}},
		{"# inside a word", []string{"echo a#'b", "c'"}, []string{"echo a#'b\nc'"}},
		{"escaped quote", []string{`echo \'a`, "b"}, []string{`echo \'a`, "b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := (TourStep{Lines: c.lines}).Commands(); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Commands() = %q, want %q", got, c.want)
			}
		})
	}
}

// TestTourOfTheReadme: the README's tour has the steps `make run` prints,
// each with commands, the SQL job's among them.
func TestTourOfTheReadme(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := Tour(string(raw))
	var titles []string
	for _, s := range steps {
		titles = append(titles, s.Title)
		if len(s.Commands()) == 0 {
			t.Errorf("step %q has no commands", s.Title)
		}
		// Each command starts with a program: a line joined wrongly would
		// start with an argument.
		for _, c := range s.Commands() {
			if prog, _, _ := strings.Cut(c, " "); !slices.Contains([]string{"export", "bin/kubectl", "bin/helm", "curl", "sed"}, prog) {
				t.Errorf("step %q: command %q", s.Title, c)
			}
		}
	}
	for _, want := range []string{"A session cluster.", "A job cluster, upgraded with a savepoint.", "A SQL job, upgraded the same way."} {
		found := false
		for _, s := range titles {
			found = found || s == want
		}
		if !found {
			t.Errorf("no tour step %q in %q", want, titles)
		}
	}
	if len(steps) == 0 || !strings.HasPrefix(steps[0].Lines[0], "export KUBECONFIG=") {
		t.Errorf("the tour does not start with the kubeconfig's export: %+v", steps)
	}
}
