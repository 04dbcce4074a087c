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
