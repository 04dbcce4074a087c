// Command gen-aiperf-artifacts writes a synthetic checkpoint (AIPerf 0.13.0
// records and raw export with base64 image payloads, server records,
// native answers, the dataset's sessions) for the parse-and-join
// benchmark. See qual/streamjoin/synth.
//
//	gen-aiperf-artifacts -n 1000000 -out /tmp/bench/ckpt
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin/synth"
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
	fmt.Fprintf(os.Stderr, "gen-aiperf-artifacts: %d requests, %.2f GiB in %s\n", cfg.Requests, float64(exp.Bytes)/(1<<30), *out)
}
