package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/corpus"
)

type corpusOptions struct {
	Family string
	Out    string
	Count  int
}

func newCorpusCmd(d deps) *cobra.Command {
	var opts corpusOptions
	cmd := &cobra.Command{
		Use:   "corpus --family ref-vlm|ref-detect --out DIR [--count N]",
		Short: "Write a deterministic synthetic image corpus with ground truth",
		Long: `Write DIR/img-NNNN.png|jpg (several sizes, PNG and JPEG) and DIR/corpus.json with
each image's ground truth (labels and normalised boxes) and, for ref-vlm, a
question and its expected answer. The same flags always give the same bytes.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required([2]string{"family", opts.Family}, [2]string{"out", opts.Out}); err != nil {
				return err
			}
			if opts.Count < 1 {
				return usageErr("--count must be at least 1, got %d", opts.Count)
			}
			c, err := corpus.Generate(opts.Family, opts.Count, opts.Out)
			if err != nil {
				return withCode(exitUsage, fmt.Errorf("corpus: %w", err))
			}
			fmt.Fprintf(d.ErrOut, "wrote %d %s images and %s to %s\n", len(c.Entries), c.Family, corpus.IndexFile, opts.Out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Family, "family", "", "family of the corpus: ref-vlm or ref-detect")
	f.StringVar(&opts.Out, "out", "", "directory to write")
	f.IntVar(&opts.Count, "count", 60, "number of images")
	return cmd
}
