package main

import (
	"go/parser"
	"go/token"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// productionFiles are the files of this command that encore api, encore
// worker and encore gate run (the rest wires encore dev, the drills and the
// development tools).
var productionFiles = []string{"serve.go", "gate.go"}

// TestWhatProductionRunsImportsNothingFromDev lists every package that
// encore api, encore worker and encore gate reach, through every import of
// every import, and fails on any under dev/: the payment sandbox, the demo
// data, the private servers and the embedded Temporal server never ship in
// what production runs.
func TestWhatProductionRunsImportsNothingFromDev(t *testing.T) {
	t.Parallel()
	const module = "github.com/encore-tickets/encore/"
	roots := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range productionFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			require.Falsef(t, strings.HasPrefix(path, module+"dev/"), "%s imports %s", name, path)
			if strings.HasPrefix(path, module) {
				roots[path] = true
			}
		}
	}
	require.Contains(t, roots, module+"system", "the production files no longer reach the composition root: update productionFiles")
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}"}
	for p := range roots {
		args = append(args, p)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var deps, fromDev []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module) {
			deps = append(deps, p)
		}
		if strings.HasPrefix(p, module+"dev/") {
			fromDev = append(fromDev, p)
		}
	}
	require.Greater(t, len(deps), 20, "go list found too few of the module's packages to be listing them: %v", deps)
	require.Empty(t, fromDev, "encore api, worker or gate reach development machinery")
}
