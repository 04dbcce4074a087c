package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/native"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/task"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

type nativeOptions struct {
	Bundle   string
	Requests string
	Out      string
}

func newNativeCmd(d deps) *cobra.Command {
	var opts nativeOptions
	cmd := &cobra.Command{
		Use:   "native --bundle B --requests IN.jsonl --out OUT.jsonl",
		Short: "Run the Task in-process, without HTTP, on recorded request payloads",
		Long: `Read request lines {"request_id","route","payload"} (payload: the exact JSON body
that was, or would be, posted to route) and write one line per request:
{"request_id","answer","task_ms"}, where answer is what the HTTP route answers:
the data array of /v1/infer exactly, or for chat {"text","completion_tokens"}
(message.content and usage.completion_tokens), or {"request_id","error",
"task_ms"} when the payload is rejected.
A route the bundle's family does not serve is an input error (exit 2).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required([2]string{"bundle", opts.Bundle}, [2]string{"requests", opts.Requests}, [2]string{"out", opts.Out}); err != nil {
				return err
			}
			b, err := bundle.Load(opts.Bundle)
			if err != nil {
				return withCode(exitUsage, fmt.Errorf("native: %w", err))
			}
			in, err := os.Open(opts.Requests)
			if err != nil {
				return withCode(exitUsage, fmt.Errorf("native: %w", err))
			}
			defer in.Close()
			out, err := fileio.CreateAtomic(opts.Out)
			if err != nil {
				return withCode(exitUsage, fmt.Errorf("native (bundle %s): %w", opts.Bundle, err))
			}
			sum, err := native.Run(task.New(b, task.Options{}), in, opts.Requests, out)
			if err != nil {
				out.Abort()
				return withCode(exitUsage, fmt.Errorf("native (bundle %s): %w", opts.Bundle, err))
			}
			if err := out.Commit(); err != nil {
				return withCode(exitUsage, fmt.Errorf("native (bundle %s): %w", opts.Bundle, err))
			}
			fmt.Fprintf(d.ErrOut, "native: %d requests, %d answered, %d rejected\n", sum.Requests, sum.Answered, sum.Rejected)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Bundle, "bundle", "", "bundle file")
	f.StringVar(&opts.Requests, "requests", "", "request lines to run (JSONL)")
	f.StringVar(&opts.Out, "out", "", "answer lines to write (JSONL)")
	return cmd
}
