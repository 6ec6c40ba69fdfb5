package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/datapilot/datapilot/internal/platform"
)

// TestPrintTourPrintsEveryStepOfTheReadme: `datapilot-local up` prints
// every command of the README's tour, with this platform's kubeconfig.
func TestPrintTourPrintsEveryStepOfTheReadme(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := platform.Tour(string(raw))
	var b bytes.Buffer
	printTour(&b, steps, ".", "/state/kubeconfig", false)
	out := b.String()
	for _, s := range steps {
		if s.Title != "" && !strings.Contains(out, "# "+s.Title+"\n") {
			t.Errorf("step %q not printed", s.Title)
		}
		for _, l := range s.Lines {
			if !strings.HasPrefix(l, "export KUBECONFIG=") && !strings.Contains(out, "  "+l+"\n") {
				t.Errorf("line %q not printed", l)
			}
		}
	}
	for _, want := range []string{"  export KUBECONFIG=/state/kubeconfig\n", "bin/kubectl apply -f examples/sql-job.yaml\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("printed tour lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "$PWD") || strings.Contains(out, "Flink REST is not on") {
		t.Errorf("printed tour:\n%s", out)
	}
}

func TestPrintTourFallbacks(t *testing.T) {
	for _, c := range []struct {
		name         string
		root         string
		otherSimAddr bool
		steps        []platform.TourStep
		want         string
	}{
		{"no README", "/src/datapilot", false, nil,
			"The tour: README.md, \"A five-minute tour\" (in another terminal, in /src/datapilot, export KUBECONFIG=/k).\n"},
		{"simulator elsewhere", ".", true, []platform.TourStep{{Lines: []string{"curl http://127.0.0.1:8089/x"}}},
			"The tour (README.md, \"A five-minute tour\"), in another terminal:\n\n  curl http://127.0.0.1:8089/x\n\n" +
				"Flink REST is not on 127.0.0.1:8089: use its address above in these commands and in the examples' jarURI.\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			printTour(&b, c.steps, c.root, "/k", c.otherSimAddr)
			if b.String() != c.want {
				t.Errorf("printed:\n%s\nwant:\n%s", b.String(), c.want)
			}
		})
	}
}
