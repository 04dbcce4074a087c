// Command baseline-noise is make bench's measurement of timing noise and of
// the baseline rule of reports/stats (scripts/bench.sh parts 5 and 6,
// docs/performance.md):
//
//	baseline-noise repeats [-save-times FILE] DIR...
//
// reads repeated runs of one profile (each DIR an OUT/<group>/<profile>
// evidence directory), prints each run's figures with their intervals, the
// drift check, each metric's run-to-run spread and what the baseline rule
// says of every pair of these runs; -save-times keeps the first run's
// per-request times for fits.
//
//	baseline-noise synth [-fit-times FILE,...] [-fit-rows DIR,...] [-pairs N] ...
//
// fits latency distributions to measured per-request times and to rows'
// recorded p50/p95 (published evidence), draws many pairs of synthetic runs
// from each and prints the rule's false calls on same-distribution pairs,
// its detection of a 20 % shift, the power curve, a sweep of the minimum
// effect, and the same with run-to-run noise and trials.
//
// Lines for people go to stderr, prefixed by -label; figures to stdout, one
// `name: value` a line.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: baseline-noise repeats|synth [flags] ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "repeats":
		err = repeats(os.Args[2:])
	case "synth":
		err = synth(os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "baseline-noise: unknown subcommand %q (repeats, synth)\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "baseline-noise:", err)
		os.Exit(1)
	}
}

// out prints lines for people and figures.
type out struct{ label string }

func (o out) say(format string, a ...any) {
	fmt.Fprintf(os.Stderr, o.label+": "+format+"\n", a...)
}

func (o out) figure(name, value string) { fmt.Printf("%s: %s\n", name, value) }
