package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

type makeBundleOptions struct {
	Family    string
	Out       string
	Precision string
	Seed      int64
}

func newMakeBundleCmd(d deps) *cobra.Command {
	var opts makeBundleOptions
	cmd := &cobra.Command{
		Use:   "make-bundle --family ref-vlm|ref-detect --out FILE.bundle [--precision fp32|fp16] [--seed N]",
		Short: "Write a reference bundle and print its sha256",
		Long: `Write a reference bundle: canonical JSON (sorted keys, no timestamps) holding
the family, task, precision, seed and model parameters. The same flags always
give the same bytes, so the sha256 printed on stdout is the bundle's identity.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required([2]string{"family", opts.Family}, [2]string{"out", opts.Out}); err != nil {
				return err
			}
			b, err := bundle.New(opts.Family, opts.Precision, opts.Seed)
			if err != nil {
				return usageErr("make-bundle: %w", err)
			}
			data, err := b.Encode()
			if err != nil {
				return err
			}
			if err := fileio.WriteFile(opts.Out, data); err != nil {
				return withCode(exitUsage, fmt.Errorf("make-bundle: %w", err))
			}
			fmt.Fprintln(d.Out, bundle.Digest(data))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Family, "family", "", "family of the bundle: ref-vlm or ref-detect")
	f.StringVar(&opts.Out, "out", "", "bundle file to write")
	f.StringVar(&opts.Precision, "precision", bundle.PrecisionFP32, "precision: fp32 or fp16")
	f.Int64Var(&opts.Seed, "seed", 1, "seed of the model parameters")
	return cmd
}
