// Command flinkcharts keeps the Flink environment charts' vendored copies in
// step (sync) and runs their build checks (check); see internal/chartcheck.
//
//	go run ./hack/flinkcharts sync
//	go run ./hack/flinkcharts check
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/datapilot/datapilot/internal/chartcheck"
)

func main() { os.Exit(run()) }

func run() int {
	charts := flag.String("charts", "charts", "the charts directory")
	helm := flag.String("helm", filepath.Join("bin", "helm"), "the helm binary")
	flag.Parse()
	var err error
	switch flag.Arg(0) {
	case "sync":
		err = chartcheck.Sync(*charts)
	case "check":
		var home string
		if home, err = os.MkdirTemp("", "flinkcharts-"); err == nil {
			defer os.RemoveAll(home)
			err = chartcheck.Check(chartcheck.Helm{Bin: *helm, Home: home}, *charts)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: flinkcharts [-charts dir] [-helm bin] sync|check")
		return 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
