package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/ci"
	"github.com/trtmc-qual/trtmc-qual/qual/slurm"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
)

// exitCode is trtmc-qual's documented exit status. This file is the one
// place the numbers live: exitStatuses says what each means (--help and
// the README's "Exit status" table are rendered from it), errorKinds which
// kind of error gives which. Domain packages define their error kinds
// (typed errors, sentinels) and never a number.
type exitCode int

const (
	exitOK          exitCode = 0   // everything qualified / valid
	exitFailed      exitCode = 1   // a qualification or check failed
	exitUsage       exitCode = 2   // configuration, inventory or usage error
	exitSetup       exitCode = 3   // setup error: server, GPU or AIPerf unavailable
	exitHarness     exitCode = 4   // harness error: a bug, an I/O failure
	exitInterrupted exitCode = 130 // interrupted (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT)
)

// exitStatus is one row of the exit-status table.
type exitStatus struct {
	code exitCode
	// help is the line `trtmc-qual --help` prints.
	help string
	// doc is the README's meaning: the help line with what gives it.
	doc string
}

// exitStatuses is the table of exit statuses, in order.
func exitStatuses() []exitStatus {
	return []exitStatus{
		{exitOK, "everything qualified / valid", "everything qualified / valid"},
		{exitFailed, "a qualification or check failed",
			"a qualification or check failed (a row failed or broke; for `report`, also malformed or changed evidence)"},
		{exitUsage, "configuration, inventory or usage error", "configuration, inventory or usage error"},
		{exitSetup, "setup error (server, GPU, AIPerf unavailable)",
			"setup error: a server that never came up, a busy GPU, AIPerf missing or the wrong version, a GPU family on a host without a GPU, " +
				"a Slurm submission the cluster rejected, the group's evidence directory in use by another run " +
				"(it is named; the same command succeeds once that run ends)"},
		{exitHarness, "harness error (a bug, an I/O failure)", "harness error (a bug, an I/O failure)"},
		{exitInterrupted, "interrupted", "interrupted (Ctrl-C, SIGTERM, SIGHUP — a closed terminal or lost ssh session — or SIGQUIT; a second one forces)"},
	}
}

// exitStatusHelp is the EXIT STATUS section of `trtmc-qual --help`.
func exitStatusHelp() string {
	var b strings.Builder
	b.WriteString("EXIT STATUS")
	for _, s := range exitStatuses() {
		fmt.Fprintf(&b, "\n  %-4d %s", s.code, s.help)
	}
	return b.String()
}

// exitOutcome is one outcome a verb's help names, with its status.
type exitOutcome struct {
	code exitCode
	when string
}

// everyVerbExits are the statuses any verb can end with: a mistake on its
// command line (2) and a harness error (4). exitHelp adds each one a verb
// does not name itself, in the table's words.
var everyVerbExits = []exitCode{exitUsage, exitHarness}

// exitHelp is a verb's "Exit status:" paragraph, generated from its own
// outcomes and the table: each outcome as "CODE when", then the statuses
// every verb can end with that the verb did not name (exitStatuses' help
// words), in the order of the codes, wrapped at 80 columns. Every verb's
// --help ends with it (TestEveryVerbStatesItsExitStatuses).
func exitHelp(outcomes ...exitOutcome) string {
	named := map[exitCode]bool{}
	for _, o := range outcomes {
		named[o.code] = true
	}
	all := append([]exitOutcome(nil), outcomes...)
	for _, s := range exitStatuses() {
		if !named[s.code] && slices.Contains(everyVerbExits, s.code) {
			all = append(all, exitOutcome{s.code, s.help})
		}
	}
	slices.SortStableFunc(all, func(a, b exitOutcome) int { return int(a.code) - int(b.code) })
	parts := make([]string, len(all))
	for i, o := range all {
		parts[i] = fmt.Sprintf("%d %s", o.code, o.when)
	}
	return wrapWords("Exit status: "+strings.Join(parts, ", ")+".", 80)
}

// wrapWords breaks text into lines of at most width columns between words
// (a longer word stands on a line of its own).
func wrapWords(s string, width int) string {
	var b strings.Builder
	col := 0
	for _, w := range strings.Fields(s) {
		n := utf8.RuneCountInString(w)
		switch {
		case col == 0:
		case col+1+n > width:
			b.WriteByte('\n')
			col = 0
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += n
	}
	return b.String()
}

// rowExitStatuses are the statuses with which `trtmc-qual run` ends after
// writing its rows, whatever their verdicts: the Slurm executor keeps the
// row of a task that ended with one of them (slurm.Follower.RowExits).
func rowExitStatuses() []int { return []int{int(exitOK), int(exitFailed), int(exitSetup)} }

// errorKind is one kind of error and the exit status it gives.
type errorKind struct {
	// name is the kind as the code spells it (a type or a sentinel).
	name string
	code exitCode
	// when says what the kind is (docs/design.md prints it).
	when string
	// is reports whether err is, or wraps, an error of the kind.
	is func(err error) bool
}

// errorKinds maps every kind of error that is not a harness error to its
// exit status. The first kind found anywhere in an error's chain decides,
// so interruption comes first: a run stopped by Ctrl-C exits 130 whatever
// it was doing. A verb's own outcome ("2 rows failed", "host not ready")
// names its status itself (withCode); any other error is exit 4.
func errorKinds() []errorKind {
	return []errorKind{
		{"context.Canceled", exitInterrupted, "the root context was cancelled: Ctrl-C, SIGTERM, SIGHUP or SIGQUIT (signals.go)", isErr(context.Canceled)},

		{"flagError", exitUsage, "a mistake on the command line: a flag, its value, a positional argument, an unknown verb or subcommand (cobra's own errors through SetFlagErrorFunc, usageArgs and unknownVerb; a group verb's unknown subcommand through groupVerb, where cobra would print the help and exit 0)", isA[*flagError]},
		{"configError", exitUsage, "the configuration (flags, TRTMC_QUAL_* environment, config file) or the family configuration", isA[*configError]},
		{"inventory.Problems", exitUsage, "the inventory does not validate (every problem as file:line: field: problem)", isA[inventory.Problems]},
		{"specs.ConfigError", exitUsage, "the spec-groups file", isA[*specs.ConfigError]},
		{"specs.ErrUnknownGroup", exitUsage, "a group the spec-groups file does not name", isErr(specs.ErrUnknownGroup)},
		{"specs.ErrNotTRTMC", exitUsage, "--repo is not a TRTMC checkout", isErr(specs.ErrNotTRTMC)},
		{"gitread.ErrUnknownRef", exitUsage, "a ref that names no commit of --repo", isErr(gitread.ErrUnknownRef)},
		{"gitread.ErrNotRepository", exitUsage, "--repo is not a git repository", isErr(gitread.ErrNotRepository)},
		{"qual.UsageError", exitUsage, "a selection that names nothing: --group, --only, --out, --gpus", isA[*qual.UsageError]},
		{"ci.UsageError", exitUsage, "a group the premerge job cannot check", isA[*ci.UsageError]},
		{"slurm.ActiveError", exitUsage, "an earlier Slurm submission of the group into --out still has tasks queued or running", isA[*slurm.ActiveError]},
		{"slurm.RecordError", exitUsage, "the Slurm job record under --out cannot be read or holds no submission", isA[*slurm.RecordError]},

		{"qual.SetupError", exitSetup, "what the run needs is unavailable before any checkpoint: AIPerf, a GPU, Slurm", isA[*qual.SetupError]},
		{"evidence.LockedError", exitSetup, "another run holds the group's evidence directory (named; retried later, the command succeeds)", isA[*evidence.LockedError]},
		{"gitread.ErrGitUnavailable", exitSetup, "the git executable cannot be run", isErr(gitread.ErrGitUnavailable)},
	}
}

// isA is the kind "an error of type T in the chain" (errors.As).
func isA[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// isErr is the kind "the sentinel target in the chain" (errors.Is).
func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

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

// codeFor maps an error to its exit status: a verb's own status first,
// then the first kind of errorKinds in the chain. Anything else is a
// harness error: a bug or an I/O failure, reported with detail.
func codeFor(err error) exitCode {
	if err == nil {
		return exitOK
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	for _, k := range errorKinds() {
		if k.is(err) {
			return k.code
		}
	}
	return exitHarness
}

// usageArgs makes a positional-argument validator's error a usage error
// (cobra.NoArgs, cobra.ExactArgs, ... return plain errors). pflag.ErrHelp,
// cobra's request to print the help, passes through untouched.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		err := v(cmd, args)
		if err == nil || errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return &flagError{err: err}
	}
}

// unknownVerb is cobra's own check that the words name a verb (Find's only
// error: a word at the root that is no verb, with cobra's suggestions),
// asked before Execute so that its error is typed. cobra's shell-completion
// request is left to Execute, which adds its verb.
func unknownVerb(root *cobra.Command, args []string) error {
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		return nil
	}
	if _, _, err := root.Find(args); err != nil {
		return &flagError{err: err}
	}
	return nil
}

// usageTree prepares a command tree for execution: cobra's own help and
// completion verbs are added now rather than inside Execute, and every
// verb's positional-argument validator, ours and cobra's, reports a usage
// error. Flag errors already do (root's SetFlagErrorFunc). A group verb
// (inventory, adapter, corpus, completion: subcommands and nothing to run
// of its own) prints its help when called alone, and a word that names none
// of its subcommands is a usage error: cobra prints the help and exits 0,
// so a CI script with a misspelled subcommand would pass.
func usageTree(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root && c.HasSubCommands() && !c.Runnable() {
			c.Args = cobra.ArbitraryArgs
			c.RunE = groupVerb
		}
		if c.Args != nil {
			c.Args = usageArgs(c.Args)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// groupVerb runs a group verb: its help, or a usage error naming the word
// that is none of its subcommands (with cobra's suggestions).
func groupVerb(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default for the root
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return &flagError{err: errors.New(msg)}
}
