package csvsafe_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/internal/csvsafe"
)

func TestTextThatStartsAFormulaIsQuotedAndNumbersTheProgramWroteAreNot(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`=HYPERLINK("http://x.invalid","x")`: `'=HYPERLINK("http://x.invalid","x")`,
		"+1+2":                               "'+1+2",
		"-5":                                 "'-5",
		"@SUM(A1)":                           "'@SUM(A1)",
		"\t=1":                               "'\t=1",
		"\r=1":                               "'\r=1",
		"Balcony":                            "Balcony",
		"a=b":                                "a=b",
		"":                                   "",
	} {
		require.Equal(t, want, csvsafe.Neutralise(in), "%q", in)
	}
	var b bytes.Buffer
	w := csvsafe.NewWriter(&b)
	require.NoError(t, w.Header("name", "amount"))
	require.NoError(t, w.Write(csvsafe.Text("-5"), csvsafe.Int(int64(-500))))
	require.NoError(t, w.Flush())
	require.Equal(t, "name,amount\n'-5,-500\n", b.String())
}
