package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// exitCode is trtmc-qual's documented exit status. This file is the one
// place the table lives; --help and the README print it.
type exitCode int

const (
	exitOK          exitCode = 0   // everything qualified / valid
	exitFailed      exitCode = 1   // a qualification or check failed
	exitUsage       exitCode = 2   // configuration, inventory or usage error
	exitSetup       exitCode = 3   // setup error: server, GPU or AIPerf unavailable
	exitHarness     exitCode = 4   // harness error: a bug, an I/O failure
	exitInterrupted exitCode = 130 // interrupted (Ctrl-C, SIGTERM)
)

// exitCodeHelp is shown in `trtmc-qual --help` and copied into the README.
const exitCodeHelp = `EXIT STATUS
  0    everything qualified / valid
  1    a qualification or check failed
  2    configuration, inventory or usage error
  3    setup error (server, GPU, AIPerf unavailable)
  4    harness error (a bug, an I/O failure)
  130  interrupted`

// exitCoder is implemented by domain errors that know their exit status
// (inventory.Problems, qual.SetupError, ...), so those packages need not
// import this one.
type exitCoder interface{ ExitCode() int }

// codedError is an error with an explicit exit status, for verbs whose
// outcome is not an error of any domain package (e.g. "2 rows failed").
type codedError struct {
	code exitCode
	err  error
	// quiet means the verb already printed everything the user needs.
	quiet bool
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

func withCode(code exitCode, err error) error { return &codedError{code: code, err: err} }

// flagError is a usage mistake; main prints the verb's usage after it.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

func flagErrorf(format string, args ...any) error {
	return &flagError{err: fmt.Errorf(format, args...)}
}

// codeFor maps an error to its exit status. Anything unrecognised is a
// harness error: a bug or an I/O failure, reported with detail.
func codeFor(err error) exitCode {
	if err == nil {
		return exitOK
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	if errors.Is(err, context.Canceled) {
		return exitInterrupted
	}
	var fe *flagError
	if errors.As(err, &fe) {
		return exitUsage
	}
	var ec exitCoder
	if errors.As(err, &ec) {
		return exitCode(ec.ExitCode())
	}
	// cobra's own flag parsing errors.
	msg := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand flag", "unknown command", "invalid argument",
		"flag needs an argument", "accepts ", "requires at least", "required flag"} {
		if strings.Contains(msg, p) {
			return exitUsage
		}
	}
	return exitHarness
}
