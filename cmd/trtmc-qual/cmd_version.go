package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newVersionCmd(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the harness version and git commit",
		Long:    "Print the harness version and git commit.\n\n" + exitHelp(exitOutcome{exitOK, "printed"}),
		Example: "  trtmc-qual version\n  trtmc-qual --version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(f.IO.Out, versionLine(f))
			return err
		},
	}
}

// versionLine is what `trtmc-qual version` and `trtmc-qual --version` print.
func versionLine(f *factory) string {
	return fmt.Sprintf("trtmc-qual %s (commit %s)\n", f.Version, f.Commit)
}
