package schema_test

import (
	"testing"

	"github.com/encore-tickets/encore/dev/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
