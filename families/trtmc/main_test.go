package trtmc

import (
	"os"
	"testing"

	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	trtmctest.Cleanup()
	os.Exit(code)
}
