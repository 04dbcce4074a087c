// Command trtmc-qual qualifies every checkpoint of a model group on TRTMC's
// native inference server with pip-installed AIPerf.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := run(ctx, stop, os.Args[1:], systemIO())
	stop()
	os.Exit(int(code))
}
