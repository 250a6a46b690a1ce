package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
)

func TestEncoreGatePairPrintsACodeAScannerPairsWithAndRevokeTakesItBack(t *testing.T) {
	// Serial: t.Setenv changes the process's environment.
	t.Setenv("ENCORE_ENV", "development")
	t.Setenv("ENCORE_DATA_DIR", t.TempDir())
	ledger := ledgerOptions{db: filepath.Join(t.TempDir(), "ledger.db")}
	newRoot := func() *cobra.Command {
		root := &cobra.Command{Use: "encore", SilenceErrors: true, SilenceUsage: true}
		g := &cobra.Command{Use: "gate"}
		g.AddCommand(gateDeviceCommands(&ledger)...)
		root.AddCommand(g)
		return root
	}
	root := newRoot()

	code, out, errOut := run(t, root, "gate", "pair", "--name", "North 3")
	require.Equal(t, 0, code, errOut)
	m := regexp.MustCompile(`pairing code for "North 3": ([A-Z0-9]{4}-[A-Z0-9]{4})`).FindStringSubmatch(out)
	require.NotNil(t, m, out)

	keys, err := manifest.KeysFromConfig(config.Default())
	require.NoError(t, err)
	st, err := gate.OpenStore(ledger.db, keys.Encryption, gate.StoreOptions{})
	require.NoError(t, err)
	defer st.Close()
	d, token, err := st.Pair(context.Background(), m[1], "", time.Now())
	require.NoError(t, err, "the code the command printed pairs a scanner")
	require.NotEmpty(t, token)

	code, out, errOut = run(t, root, "gate", "devices")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, d.ID)
	require.Contains(t, out, `"North 3"`)
	require.Contains(t, out, "live")
	require.NotContains(t, out, token)

	code, out, errOut = run(t, root, "gate", "revoke", "North 3")
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.HasPrefix(out, "revoked "+d.ID), out)
	code, out, _ = run(t, root, "gate", "devices")
	require.Equal(t, 0, code)
	require.Contains(t, out, "revoked")

	code, _, errOut = run(t, root, "gate", "revoke", "scn_nobody")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "no such paired device")
	code, _, errOut = run(t, newRoot(), "gate", "pair")
	require.NotEqual(t, 0, code, "a scanner needs a name")
	require.Contains(t, errOut, "name")
}
