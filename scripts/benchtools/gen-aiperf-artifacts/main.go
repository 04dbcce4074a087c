// Command gen-aiperf-artifacts writes a synthetic checkpoint (AIPerf 0.13.0
// records and raw export with base64 image payloads, server records,
// native answers, the dataset) for the benchmark of `trtmc-qual report
// --rejudge`; with -seal, a whole sealed evidence directory. See
// scripts/benchtools/synth.
//
//	gen-aiperf-artifacts -n 1000000 -out /tmp/bench/out/bench/synth -seal bench/synth
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

func main() {
	var cfg synth.Config
	out := flag.String("out", "", "output directory (required)")
	flag.IntVar(&cfg.Requests, "n", 1000000, "requests (warmup + measured)")
	flag.IntVar(&cfg.Warmup, "warmup", 5, "warmup requests")
	flag.StringVar(&cfg.Family, "family", synth.FamilyDetect, "ref-detect or ref-vlm")
	flag.IntVar(&cfg.Entries, "entries", 24, "corpus entries the dataset cycles through")
	flag.IntVar(&cfg.ImageMin, "image-min", 2048, "smallest base64 image, bytes")
	flag.IntVar(&cfg.ImageMax, "image-max", 8192, "largest base64 image, bytes")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed")
	flag.BoolVar(&cfg.NoFaults, "no-faults", false, "no injected faults")
	seal := flag.String("seal", "", "GROUP/PROFILE: complete -out into sealed evidence of that row (result.json, correctness.json, summary, manifest.json), as `trtmc-qual run` leaves it")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: gen-aiperf-artifacts -out DIR [-n N] [-family F] [-seed S]")
		os.Exit(2)
	}
	exp, err := synth.Write(*out, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen-aiperf-artifacts:", err)
		os.Exit(1)
	}
	if *seal != "" {
		group, profile, ok := strings.Cut(*seal, "/")
		if !ok {
			fmt.Fprintln(os.Stderr, "gen-aiperf-artifacts: -seal wants GROUP/PROFILE")
			os.Exit(2)
		}
		if err := synth.Seal(*out, group, profile, exp); err != nil {
			fmt.Fprintln(os.Stderr, "gen-aiperf-artifacts:", err)
			os.Exit(1)
		}
	}
	fmt.Fprintf(os.Stderr, "gen-aiperf-artifacts: %d requests, %.2f GiB in %s\n", cfg.Requests, float64(exp.Bytes)/(1<<30), *out)
}
