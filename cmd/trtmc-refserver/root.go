package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"
)

// deps are the process-level things the commands use, injected so tests can
// replace them.
type deps struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	Getenv func(string) string
	// Exit ends the process at once (the crash-after fault).
	Exit func(code int)
	// IgnoreSignals stops the delivery of signals (the ignore-sigterm fault).
	IgnoreSignals func(sig ...os.Signal)
}

func defaultDeps() deps {
	return deps{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		Getenv: os.Getenv, Exit: os.Exit, IgnoreSignals: signal.Ignore,
	}
}

func run(ctx context.Context, args []string, d deps) int {
	root := newRootCmd(d)
	root.SetArgs(args)
	return exitCode(root.ExecuteContext(ctx), d.ErrOut)
}

func newRootCmd(d deps) *cobra.Command {
	root := &cobra.Command{
		Use:   "trtmc-refserver",
		Short: "Reference native server, bundles, corpus and correctness cases for trtmc-qual",
		Long: `trtmc-refserver behaves like trtmc-server from the outside, for two tiny
reference families that run anywhere without a GPU: ref-vlm (chat about an
image) and ref-detect (coloured shape detection).

` + exitCodesHelp(),
		Version:       version + " (commit " + commit + ")",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(d.In)
	root.SetOut(d.Out)
	root.SetErr(d.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return usageErr("%w", err)
	})
	root.AddCommand(
		newMakeBundleCmd(d),
		newServeCmd(d),
		newNativeCmd(d),
		newCorpusCmd(d),
		newCheckCmd(d),
	)
	return root
}

// exactArgs is cobra.ExactArgs with a usage exit code.
func exactArgs(n int, names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			if n == 0 {
				return usageErr("%s takes no arguments, got %q", cmd.CommandPath(), args)
			}
			return usageErr("%s needs %d argument(s) (%s), got %d", cmd.CommandPath(), n, strings.Join(names, " "), len(args))
		}
		return nil
	}
}

// required reports the first empty required flag as a usage error.
func required(flags ...[2]string) error {
	for _, f := range flags {
		if f[1] == "" {
			return usageErr("--%s is required", f[0])
		}
	}
	return nil
}
