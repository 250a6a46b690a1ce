package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
)

// run executes a command line in-process and returns its exit code, stdout
// and stderr.
func run(t *testing.T, root *cobra.Command, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := executeCmd(context.Background(), root, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// commandPaths lists every command of the tree as the words that reach it.
func commandPaths(cmd *cobra.Command, path []string) [][]string {
	paths := [][]string{path}
	for _, c := range cmd.Commands() {
		paths = append(paths, commandPaths(c, append(append([]string{}, path...), c.Name()))...)
	}
	return paths
}

// An unparseable environment would fail any command that loads the
// configuration: --help must not.
func breakEnvironment(t *testing.T) {
	t.Setenv("ENCORE_SWEEP_INTERVAL", "not-a-duration")
}

func TestEveryCommandDocumentsItselfAndItsFlags(t *testing.T) {
	// Serial: t.Setenv changes the process's environment; the subtests run
	// in parallel with each other under it.
	breakEnvironment(t)
	paths := commandPaths(newRootCmd(), nil)
	var names []string
	for _, p := range paths {
		names = append(names, strings.Join(p, " "))
	}
	for _, want := range []string{"dev", "api", "worker", "migrate", "seed", "audit", "manifest", "manifest export",
		"manifest inspect", "gate", "gate import", "gate sync", "gate status", "gate pair", "gate devices", "gate revoke", "venue", "venue import", "event", "event create", "event publish", "event block", "event unblock", "event cancel",
		"psp", "testinfra", "config", "temporal", "probe"} {
		require.Contains(t, names, want)
	}
	for _, path := range paths {
		t.Run("encore "+strings.Join(path, " "), func(t *testing.T) {
			t.Parallel()
			root := newRootCmd()
			cmd, _, err := root.Find(path)
			require.NoError(t, err)
			require.NotEmpty(t, cmd.Short, "Short")
			require.NotEmpty(t, cmd.Long, "Long")

			code, out, errOut := run(t, root, append(path, "--help")...)
			require.Equal(t, 0, code, errOut)
			require.Empty(t, errOut)
			require.Contains(t, out, "Usage:")
			require.Contains(t, out, strings.SplitN(cmd.Long, "\n", 2)[0])
			var flags []string
			collect := func(f *pflag.Flag) { flags = append(flags, f.Name) }
			cmd.LocalFlags().VisitAll(collect)
			cmd.InheritedFlags().VisitAll(collect)
			for _, f := range flags {
				require.Contains(t, out, "--"+f, "flag --%s is listed", f)
			}
		})
	}
}

func TestCommandLineMistakesExitTwoWithUsage(t *testing.T) {
	// Serial: t.Setenv changes the process's environment; the subtests run
	// in parallel with each other under it.
	breakEnvironment(t) // none of these gets as far as loading the configuration
	for _, tc := range []struct {
		args []string
		says string
	}{
		{nil, `missing command for "encore"`},
		{[]string{"bogus"}, `unknown command "bogus" for "encore"`},
		{[]string{"migrat"}, "Did you mean this?"},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"api", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"api", "extra"}, `unknown command "extra" for "encore api"`},
		{[]string{"audit", "--event"}, "flag needs an argument: --event"},
		{[]string{"gate", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"gate", "bogus"}, `unknown command "bogus" for "encore gate"`},
		{[]string{"gate", "status", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"gate", "import"}, `required flag(s) "manifest" not set`},
		{[]string{"gate", "sync", "--db", "ledger.db"}, `required flag(s) "from" not set`},
		{[]string{"manifest"}, `missing command for "encore manifest"`},
		{[]string{"manifest", "bogus"}, `unknown command "bogus" for "encore manifest"`},
		{[]string{"manifest", "export", "--event", "evt"}, `required flag(s) "out" not set`},
		{[]string{"manifest", "export", "--event", "evt", "--out", "f", "--since", "x"}, `invalid argument "x" for "--since"`},
		{[]string{"manifest", "inspect"}, "accepts 1 arg(s), received 0"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			code, out, errOut := run(t, newRootCmd(), tc.args...)
			require.Equal(t, 2, code, errOut)
			require.Empty(t, out)
			require.Contains(t, errOut, tc.says)
			require.Contains(t, errOut, "Usage:")
		})
	}
}

func TestConfigPrintsTheConfigurationTable(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, newRootCmd(), "config")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, config.Table(), out)
}

func TestABadEnvironmentFailsTheCommandNamingTheVariable(t *testing.T) {
	// Serial: t.Setenv changes the process's environment, which every
	// command reads.
	breakEnvironment(t)
	code, out, errOut := run(t, newRootCmd(), "config")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "ENCORE_SWEEP_INTERVAL")
	require.NotContains(t, errOut, "Usage:", "not a command-line mistake")
}

func TestTestInfraWithoutACommandIsAnError(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"testinfra"}, {"testinfra", "--"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			code, _, errOut := run(t, newRootCmd(), args...)
			require.Equal(t, 1, code)
			require.Contains(t, errOut, "testinfra: give a command after --")
		})
	}
}

// probe replaces the work of the command at path with one that records the
// arguments it was given and returns err.
func probe(t *testing.T, root *cobra.Command, path []string, err error) *[]string {
	t.Helper()
	cmd, _, findErr := root.Find(path)
	require.NoError(t, findErr)
	got := new([]string)
	cmd.RunE = action(func(_ *cobra.Command, args []string, _ config.Config) error {
		*got = args
		return err
	})
	return got
}

func TestTestInfraPassesEverythingAfterTheDashesUnchanged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{ // Taskfile.yml's test task
			[]string{"testinfra", "--", "go", "test", "-race", "-timeout", "80m", "./..."},
			[]string{"go", "test", "-race", "-timeout", "80m", "./..."},
		},
		{
			[]string{"testinfra", "--", "sh", "-c", "x", "--", "-h", "--help"},
			[]string{"sh", "-c", "x", "--", "-h", "--help"},
		},
		{[]string{"testinfra", "--", "--help"}, []string{"--help"}},
		{[]string{"testinfra", "--", "gate", "status"}, []string{"gate", "status"}},
		{[]string{"testinfra", "go", "test", "-run", "X"}, []string{"go", "test", "-run", "X"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			root := newRootCmd()
			got := probe(t, root, []string{"testinfra"}, nil)
			code, _, errOut := run(t, root, tc.args...)
			require.Equal(t, 0, code, errOut)
			require.Equal(t, tc.want, *got)
		})
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		code int
		says string
	}{
		{"success", nil, 0, ""},
		{"a child's or audit's own code passes through silently", exitCode(3), 3, ""},
		{"a failure of the work", errors.New("database down"), 1, "encore: database down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := newRootCmd()
			probe(t, root, []string{"testinfra"}, tc.err)
			code, _, errOut := run(t, root, "testinfra", "--", "true")
			require.Equal(t, tc.code, code)
			if tc.says == "" {
				require.Empty(t, errOut)
			} else {
				require.Contains(t, errOut, tc.says)
				require.NotContains(t, errOut, "Usage:")
			}
		})
	}
}

func TestEncoreDevTurnsTheDemoLoginOnUnlessTheEnvironmentSaysOtherwise(t *testing.T) {
	t.Parallel()
	require.False(t, config.Default().DemoLogin, "off by default: production-safe")
	unset := func(string) (string, bool) { return "", false }
	require.True(t, devConfig(config.Default(), unset).DemoLogin)
	off, err := config.LoadFrom(func(k string) (string, bool) { return "false", k == "ENCORE_DEMO_LOGIN" })
	require.NoError(t, err)
	require.False(t, devConfig(off, func(k string) (string, bool) { return "false", k == "ENCORE_DEMO_LOGIN" }).DemoLogin)
}
