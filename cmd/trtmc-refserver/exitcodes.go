package main

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Exit codes of trtmc-refserver.
const (
	exitOK          = 0   // success; check passed; serve drained and stopped
	exitFailed      = 1   // check gates failed; serve could not start (bind, startup-fail)
	exitUsage       = 2   // bad flags or arguments; unreadable or malformed bundle, corpus or requests
	exitCrash       = 3   // the crash-after fault ended the server
	exitInterrupted = 130 // interrupted before the work was done
)

const exitCodesHelp = `Exit status:
  0    success (check passed, serve drained and stopped)
  1    check gates failed, or serve could not start
  2    usage error, or an unreadable or malformed bundle, corpus or request file
  3    the crash-after fault ended the server
  130  interrupted`

// exitError carries an exit code. logged means the error was already
// reported (as a JSON log line) and must not be printed again.
type exitError struct {
	code   int
	err    error
	logged bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// exitCode maps an error to the exit code and prints it unless it was logged.
func exitCode(err error, errOut io.Writer) int {
	if err == nil {
		return exitOK
	}
	code := exitFailed
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
		if ee.logged {
			return code
		}
	case errors.Is(err, context.Canceled):
		code = exitInterrupted
	}
	fmt.Fprintf(errOut, "trtmc-refserver: %v\n", err)
	return code
}
