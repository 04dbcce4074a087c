package drift_test

import (
	"os"
	"testing"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs/specstest"
)

// TestMain removes the shared fixture repository after the tests.
func TestMain(m *testing.M) { os.Exit(specstest.Main(m)) }
