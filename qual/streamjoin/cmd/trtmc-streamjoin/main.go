// Command trtmc-streamjoin runs qual/streamjoin over a checkpoint
// directory and prints the per-phase counts as JSON: the parse-and-join
// half of `trtmc-qual run`, alone, for measuring it.
//
//	trtmc-streamjoin -family ref-detect -sessions DIR/sessions.jsonl DIR
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "trtmc-streamjoin:", err)
		os.Exit(1)
	}
}

func run() error {
	famFile := flag.String("families", "families/families.yaml", "family configuration")
	famName := flag.String("family", "ref-detect", "family of the checkpoint")
	sessions := flag.String("sessions", "", "the dataset's sessions (JSONL of session_id, entry_id); default DIR/sessions.jsonl")
	warmup := flag.Int("warmup", -1, "expected warmup requests (-1: not checked)")
	measured := flag.Int("measured", -1, "expected measured requests (-1: not checked)")
	noMemo := flag.Bool("no-memo", false, "extract every answer (for measurements)")
	workers := flag.Int("workers", 0, "parse workers (default GOMAXPROCS)")
	memLimit := flag.Int("mem-limit-mib", -1, "soft memory limit for the Go runtime (-1: 32 MiB + 176 bytes a session; 0: none)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile here")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if flag.NArg() != 1 {
		return fmt.Errorf("usage: trtmc-streamjoin [flags] CHECKPOINT_DIR")
	}
	dir := flag.Arg(0)
	cfg, err := families.Load(*famFile)
	if err != nil {
		return err
	}
	fam, ok := cfg.Families[*famName]
	if !ok {
		return fmt.Errorf("no family %q in %s", *famName, *famFile)
	}
	reg := families.DefaultRegistry()
	opts := streamjoin.Options{Family: fam, Extractor: reg.Extractors[fam.Extractor], Comparator: reg.Comparators[fam.Comparator],
		NoMemo: *noMemo, Workers: *workers, Expected: map[string]int{}}
	if *warmup >= 0 {
		opts.Expected[streamjoin.PhaseWarmup] = *warmup
	}
	if *measured >= 0 {
		opts.Expected[streamjoin.PhaseMeasured] = *measured
	}
	if *sessions == "" {
		*sessions = dir + "/sessions.jsonl"
	}
	start := time.Now()
	ss, err := streamjoin.LoadSessions(context.Background(), *sessions)
	if err != nil {
		return err
	}
	opts.Sessions = ss
	opts.SizeHint = ss.Len()
	switch {
	case *memLimit > 0:
		debug.SetMemoryLimit(int64(*memLimit) << 20)
	case *memLimit < 0:
		// The index and the sessions hold about 120 bytes a request; the
		// rest is headroom for the collector.
		debug.SetMemoryLimit(32<<20 + 176*int64(max(ss.Len(), 1)))
	}
	res, err := streamjoin.Join(context.Background(), streamjoin.CheckpointFiles(dir), opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "trtmc-streamjoin: %d client records, %.2f GiB in %s\n", res.Stats.ClientRecords,
		float64(res.Stats.Bytes)/(1<<30), time.Since(start).Round(time.Millisecond))
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}
