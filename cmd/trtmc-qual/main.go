// Command trtmc-qual qualifies every checkpoint of a model group on TRTMC's
// native inference server with pip-installed AIPerf.
//
// This package is the wiring only, one file per verb (cmd_<verb>.go), every
// verb the same shape: options, Validate, run (docs/design.md, "The shape
// of a verb"). Beside the verbs:
//
//   - flags.go: the flags verbs share (-o/--format with each verb's
//     formatSpec, file flags, the inventory and AIPerf flag groups), and
//     completion.go the shell completion of their values;
//   - config.go: the one resolution of the configuration, in named steps,
//     and the only place viper is used: flag > environment > file >
//     default, once, into Config (whose slurm: block is qual/slurm's Config
//     itself);
//   - exitcodes.go: the one exit-code table, error kinds to statuses;
//   - signals.go: the one signal handler, started once in main: the first
//     SIGINT, SIGTERM, SIGHUP or SIGQUIT cancels the root context and
//     prints the notice of a verb that runs children (run, ci --smoke); a
//     second one kills the default way.
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
