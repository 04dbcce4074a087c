package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams is where a verb reads and writes: data to Out, everything else
// (progress, logs, warnings) to ErrOut, so `--format json | jq` always works.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// OutTTY and ErrTTY say whether Out/ErrOut are terminals.
	OutTTY bool
	ErrTTY bool
}

func systemIO() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		OutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
}
