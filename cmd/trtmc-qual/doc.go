// Command trtmc-qual qualifies every checkpoint of a model group on TRTMC's
// native inference server with pip-installed AIPerf.
//
// This package is the wiring only, one file per verb (cmd_<verb>.go), every
// verb the same shape (below). Beside the verbs:
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
//
// # The shape of a verb
//
// Every verb is built the same way (cli/cli's options and runF, kubectl's
// Complete/Validate/Run):
//
//   - <verb>Options: the flag values, what the verb reads of the resolved
//     Config (or the Config itself, for run), and what it needs of the
//     process (streams, proc.Runner, clock, environment). No context, no
//     cobra, no factory: the logic gets everything from here.
//   - new<Verb>Cmd(f, runF): the wiring. Its RunE records what only cobra
//     knows (which flags were given, the arguments, ArgsLenAtDash), fills
//     the options from the factory and the configuration (filling never
//     fails), calls opts.Validate(), sets the interrupt notice of a verb
//     that runs children, and then calls runF(opts) when a test passed
//     one, else run<Verb>(ctx, opts). run takes kubectl's route
//     (pkg/cmd/wait/wait.go: flags, options, Validate, run) literally: its
//     flags that are not configuration keys are parsed into runFlags, the
//     ones that are keys are resolved into Config, and runFlags.toOptions
//     is the one place both become runOptions (ci --smoke goes through it
//     too).
//   - (o *<verb>Options) Validate(): the checks of the flags together, on
//     the options alone (required flags, names, -o against the verb's
//     formatSpec, file kinds, cross-flag rules); usage errors, exit 2. It
//     may settle what the flags imply (report's format from --output-file,
//     the parsed --root values).
//   - run<Verb>(ctx, opts) (runQualify for run): the verb's logic, calling
//     into qual/, inventory/, families/ and reports/.
//
// Tests parse flags by capturing the options through runF, check
// Validate() on options they build, and call run<Verb>(ctx, opts) directly
// (TestRunValidate, TestReportRunDirect, TestInventoryRunDirect, ...).
// version only prints a line and has no options.
package main
