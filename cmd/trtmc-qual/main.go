// Command trtmc-qual qualifies every checkpoint of a model group on TRTMC's
// native inference server with pip-installed AIPerf.
package main

import (
	"context"
	"os"
)

func main() {
	io := systemIO()
	sig := newInterrupts(io.ErrOut)
	ctx, stop := sig.Start(context.Background())
	code := run(ctx, sig, os.Args[1:], io)
	stop()
	os.Exit(int(code))
}
