// Command trtmc-refserver is the reference native server: a small stand-in for
// trtmc-server (and its bundles, native runner and correctness cases) that
// runs anywhere, without GPUs, so the qualification pipeline runs for real.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Set by the linker: -X main.version=... -X main.commit=...
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal ends the process the default way
	}()
	code := run(ctx, os.Args[1:], defaultDeps())
	stop()
	os.Exit(code)
}
