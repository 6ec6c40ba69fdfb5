package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/datapilot/datapilot/internal/testenv"
)

// The packages whose verdicts become condition reasons: the controller
// sets every condition (conditions.go) from what it, the lifecycle, the
// autopilot and the health checks return; api/v1 names the upgrade phases,
// which are the Upgrading condition's reasons.
var reasonSources = []string{"internal/controller", "internal/lifecycle", "internal/autopilot", "internal/health", "api/v1"}

// reasonSetters are the functions whose second argument is a condition's
// reason.
var reasonSetters = map[string]bool{"setUpgrading": true, "setRollingBack": true, "setRolledBack": true, "conclude": true, "cond": true}

// verdictTypes are the types whose Reason field (or, for the controller's
// positional verdict, second element) is a condition's reason.
var verdictTypes = map[string]bool{"verdict": true, "Verdict": true, "Probe": true, "LevelVerdict": true, "Fact": true, "Condition": true}

// reasonTypes are the constant types whose values are condition reasons:
// the autopilot's recommendation kinds and the upgrade phases.
var reasonTypes = map[string]bool{"Kind": true, "UpgradePhase": true}

// conditionReasons reads the reasons the operator can set from its source:
// constants named Reason..., constants of reasonTypes, and string literals
// in a verdict's reason or a setter's reason argument. It reads syntax, not
// types, so it errs towards more reasons, never fewer.
func conditionReasons(t *testing.T, root string) map[string]string {
	t.Helper()
	found := map[string]string{}
	fset := token.NewFileSet()
	add := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && s != "" {
				if _, seen := found[s]; !seen {
					found[s] = fset.Position(lit.Pos()).String()
				}
			}
		}
	}
	for _, dir := range reasonSources {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") || strings.HasPrefix(filepath.Base(path), "zz_generated") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GenDecl:
					if n.Tok != token.CONST {
						return true
					}
					for _, spec := range n.Specs {
						vs := spec.(*ast.ValueSpec)
						typed := false
						if id, ok := vs.Type.(*ast.Ident); ok && reasonTypes[id.Name] {
							typed = true
						}
						for i, name := range vs.Names {
							if i < len(vs.Values) && (typed || strings.HasPrefix(name.Name, "Reason")) {
								add(vs.Values[i])
							}
						}
					}
				case *ast.CompositeLit:
					if !verdictTypes[typeName(n.Type)] {
						return true
					}
					for i, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Reason" {
								add(kv.Value)
							}
						} else if i == 1 && typeName(n.Type) == "verdict" {
							add(el)
						}
					}
				case *ast.CallExpr:
					if len(n.Args) >= 2 && reasonSetters[funcName(n.Fun)] {
						add(n.Args[1])
					}
				}
				return true
			})
		}
	}
	return found
}

func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

func funcName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// TestRunbookHasEveryReason: each condition reason the operator can set
// has an entry in docs/operations/runbook.md whose anchor is the reason in
// lower case, which the chart's alerts link to.
func TestRunbookHasEveryReason(t *testing.T) {
	root := testenv.Root()
	reasons := conditionReasons(t, root)
	// The scan must see the reasons of each source, or it proves nothing.
	for _, known := range []string{"SharedStorageRequired", "JobManagerStuck", "NewestStateUnknown", "UpgradeFailed", "GateFailed", "RestUnavailable", "CapReached", "CollectingMetrics", "SavepointTimedOut", "NotDetected", "Verifying"} {
		if _, ok := reasons[known]; !ok {
			t.Errorf("The reason scan did not find %s; it no longer reads the source it should", known)
		}
	}
	ds := &docs{root: root, parsed: map[string]doc{}}
	runbook, err := ds.get("docs/operations/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for r := range reasons {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		if !runbook.anchors[strings.ToLower(r)] {
			t.Errorf("docs/operations/runbook.md has no entry for reason %s (%s): add a heading \"### %s\" under its condition type", r, reasons[r], r)
		}
	}
	t.Logf("%d reasons", len(names))
}
