//go:build !integration

package main

import (
	"os"
	"testing"

	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
)

// TestMain removes the fake TRTMC programs the adapter tests built (the
// integration tier's TestMain, in harness_integration_test.go, does too).
func TestMain(m *testing.M) {
	code := m.Run()
	trtmctest.Cleanup()
	os.Exit(code)
}
