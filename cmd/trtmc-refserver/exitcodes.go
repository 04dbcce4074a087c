package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/server"
)

// Exit codes of trtmc-refserver, a program of its own (trtmc-qual's table
// is cmd/trtmc-qual/exitcodes.go). exitStatuses says what each means; the
// root's --help is rendered from it.
const (
	exitOK          = 0                    // success; check passed; serve drained and stopped
	exitFailed      = 1                    // check gates failed; serve could not start (bind, startup-fail)
	exitUsage       = 2                    // bad flags or arguments; unreadable or malformed bundle, corpus or requests
	exitCrash       = server.CrashExitCode // the crash-after fault ended the server (the server exits itself)
	exitInterrupted = 130                  // interrupted before the work was done
)

// exitStatuses is the table of exit statuses, in order, with --help's line.
func exitStatuses() []struct {
	code int
	help string
} {
	return []struct {
		code int
		help string
	}{
		{exitOK, "success (check passed, serve drained and stopped)"},
		{exitFailed, "check gates failed, or serve could not start"},
		{exitUsage, "usage error, or an unreadable or malformed bundle, corpus or request file"},
		{exitCrash, "the crash-after fault ended the server"},
		{exitInterrupted, "interrupted"},
	}
}

// exitCodesHelp is the root --help's "Exit status:" section.
func exitCodesHelp() string {
	var b strings.Builder
	b.WriteString("Exit status:")
	for _, s := range exitStatuses() {
		fmt.Fprintf(&b, "\n  %-4d %s", s.code, s.help)
	}
	return b.String()
}

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
