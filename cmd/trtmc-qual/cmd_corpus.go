package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
)

func newCorpusCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "corpus",
		Short: "Prepare the image corpus a group is measured on",
		Example: `  trtmc-qual corpus init corpora/vlm --questions questions.jsonl
  trtmc-qual corpus init corpora/detection`,
	}
	cmd.AddCommand(newCorpusInitCmd(f, nil))
	return cmd
}

type corpusInitOptions struct {
	IO *IOStreams
	// Dir is the image directory (the argument).
	Dir               string
	Questions, Source string
	Force             bool
}

func newCorpusInitCmd(f *factory, runF func(*corpusInitOptions) error) *cobra.Command {
	opts := &corpusInitOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "init DIR [--questions FILE]",
		Short: "Write DIR/corpus.json for the images in DIR",
		Long: `Write DIR/corpus.json (schema trtmc-qual/corpus/v1) for the PNG, JPEG and GIF
images in DIR, in file-name order: each entry's id (the file name without its
extension), file, type and size are read from the image itself. For a
vision-language corpus, --questions names a JSONL file of
{"file": "car.jpg", "question": "What colour is the car?"} (or "id" instead
of "file"): every image needs exactly one question. A detection corpus (the
seeds' 100-image COCO selection) takes none.

An existing corpus.json is kept unless --force. The sha256 of corpus.json and
the inventory line that pins it are printed.

` + exitHelp(
			exitOutcome{exitOK, "written"},
			exitOutcome{exitUsage, "an image that cannot be read or decoded, a missing, unknown or duplicate question, an existing corpus.json without --force, or a usage error"}),
		Example: `  trtmc-qual corpus init corpora/vlm --questions corpora/vlm-questions.jsonl --source "COCO val2017, 20 images"
  trtmc-qual corpus init corpora/detection --source "COCO val2017, the seeds' 100-image selection"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runCorpusInit(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Questions, "questions", "", "JSONL of {file|id, question} (vision-language corpora)")
	fl.StringVar(&opts.Source, "source", "", "where the images come from (recorded in corpus.json)")
	fl.BoolVar(&opts.Force, "force", false, "replace an existing corpus.json")
	return cmd
}

// runCorpusInit writes DIR/corpus.json (aiperf.InitCorpus) and prints its
// sha256 and the inventory line that pins it. Its checks are the
// corpus's own (every image readable, a question for each), usage errors.
func runCorpusInit(_ context.Context, opts *corpusInitOptions) error {
	c, sum, err := aiperf.InitCorpus(opts.Dir, opts.Questions, opts.Source, opts.Force)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("corpus init: %w", err))
	}
	fmt.Fprintf(opts.IO.Out, "%s  %s/corpus.json\n", sum, opts.Dir)
	fmt.Fprintf(opts.IO.ErrOut, "corpus init: %d image(s); pin it in the inventory's workload:\n  dataset: {corpus: %s, sha256: %s}\n",
		len(c.Entries), opts.Dir, sum)
	return nil
}
