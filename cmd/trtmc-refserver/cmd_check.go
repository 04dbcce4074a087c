package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/check"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/corpus"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/task"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

type checkOptions struct {
	Bundle string
	Corpus string
	Out    string
}

func newCheckCmd(d deps) *cobra.Command {
	var opts checkOptions
	cmd := &cobra.Command{
		Use:   "check --bundle B --corpus DIR --out RESULT.json",
		Short: "Run the family's correctness case on the exact bundle",
		Long: `Run the bundle's Task over the corpus and gate the family's metrics:
ref-detect: mAP@[.50:.95] >= 0.60 and mAP@.50 >= 0.90 against the ground truth;
ref-vlm: exact-answer accuracy >= 0.90.
Writes RESULT.json (schema trtmc-ref/check/v1); exits 0 when every gate
passes, 1 when one fails, 2 on a usage or input error.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required([2]string{"bundle", opts.Bundle}, [2]string{"corpus", opts.Corpus}, [2]string{"out", opts.Out}); err != nil {
				return err
			}
			b, err := bundle.Load(opts.Bundle)
			if err != nil {
				return withCode(exitUsage, fmt.Errorf("check: %w", err))
			}
			c, err := corpus.Load(opts.Corpus)
			if err != nil {
				return withCode(exitUsage, fmt.Errorf("check: %w", err))
			}
			res, err := check.Run(task.New(b, task.Options{}), c)
			if err != nil {
				return withCode(exitUsage, fmt.Errorf("check: %w", err))
			}
			data, err := res.Encode()
			if err != nil {
				return err
			}
			if err := fileio.WriteFile(opts.Out, data); err != nil {
				return withCode(exitUsage, fmt.Errorf("check: %w", err))
			}
			verdict := "passed"
			if !res.Passed {
				verdict = "FAILED"
			}
			fmt.Fprintf(d.ErrOut, "check %s: %s on %d images, metrics %v\n", verdict, b.Family, res.Count, res.Metrics)
			for _, g := range res.Gates {
				fmt.Fprintf(d.ErrOut, "  gate %s = %v %s %v: passed=%t\n", g.Name, g.Value, g.Op, g.Threshold, g.Passed)
			}
			if !res.Passed {
				return &exitError{code: exitFailed, err: fmt.Errorf("check failed"), logged: true}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Bundle, "bundle", "", "bundle file")
	f.StringVar(&opts.Corpus, "corpus", "", "corpus directory (with corpus.json)")
	f.StringVar(&opts.Out, "out", "", "result file to write")
	return cmd
}
