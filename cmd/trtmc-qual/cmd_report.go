package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/trtmc-qual/trtmc-qual/reports/evidence"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports"
)

type reportOptions struct {
	IO *IOStreams
	// From are the result roots (OUT directories), merged in order.
	From   []string
	Group  string
	Format string
	// Output is a file to write instead of stdout ("" = stdout); its
	// extension selects the format (or must agree with --format).
	Output string
	// UpdateDoc is a Markdown page whose block between the group's markers
	// is rewritten with the group's Markdown table; DryRun prints the diff
	// instead of writing.
	UpdateDoc string
	DryRun    bool
	Rejudge   bool
	// Baseline are the result roots of an earlier run to compare p50s with.
	Baseline     []string
	ThresholdPct float64

	Now            func() time.Time
	HarnessVersion string
	Ctx            context.Context
	Getenv         func(string) string
}

// rejudgeMemoryLimit is the Go runtime's soft memory limit during a rejudge.
const rejudgeMemoryLimit = 200 << 20

func newReportCmd(f *factory, runF func(*reportOptions) error) *cobra.Command {
	opts := &reportOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "report --group G [--from OUT ...]",
		Short: "Regenerate a group's result tables from stored evidence",
		Long: `Regenerate a group's result tables from stored evidence alone, without running
anything: the group table, the coverage matrix and a reproducible command per
row. The output is byte-identical to the OUT/<group>/results.* that run wrote
for the same evidence.

Several --from roots are merged: when a profile has results in more than one,
the run that ended last wins and the others are listed as conflicts.
Every row is checked against the seal its run wrote (manifest.json): a row
whose evidence is missing, added to or changed is an error row, never
qualified. --rejudge re-derives every row from its raw artifacts — the one
join over dataset.jsonl, AIPerf's exports, the server's records and the
native answers; correctness.json; AIPerf's summary — never from joined.jsonl
or stored counts, re-applies the verdict rules, writes result.rejudged.json
beside each result.json (which is never modified) and reports the re-judged
rows. A missing or malformed artifact makes its row an error naming file,
line and field. --baseline compares each row's HTTP and Task p50
with an earlier run and marks increases beyond --regression-threshold percent.

Formats: md (GitHub-flavoured Markdown, as in results.md), csv, json (schema
trtmc-qual/group-report/v1), html (self-contained, failure-first), table, tsv.
Without --format: table on a terminal, tsv when piped. --output-file FILE writes
the report to FILE atomically instead of stdout; the file's extension (.md,
.csv, .json, .html, .tsv) selects the format, and must agree with --format
when both are given.

--update-doc PAGE rewrites, in a Markdown page of the docs or of a pull
request, only the lines between

  <!-- trtmc-qual:GROUP:begin -->
  <!-- trtmc-qual:GROUP:end -->

with the group's Markdown report (what --format md prints), atomically;
running it again with the same evidence changes nothing. --dry-run prints the
unified diff to stdout and writes nothing. A missing, doubled or misordered
marker is an error naming the line (exit 2).

Exit status: 0 when every counted normal profile is qualified, 1 when any row
failed, broke (malformed or changed evidence included), was interrupted or was
not run, 2 for usage errors (an unknown format, a missing result root), 4 when
a file cannot be written or read for a reason other than its content.`,
		Example: `  # the Markdown to paste into a pull request
  trtmc-qual report --from out/demo --group vlm --format md

  # merge two campaigns, latest run of each checkpoint wins
  trtmc-qual report --from out/a --from out/b --group detection --output-file detection.html

  # refresh the vlm table in a docs page (see the diff first)
  trtmc-qual report --from out/demo --group vlm --update-doc docs/qualification.md --dry-run
  trtmc-qual report --from out/demo --group vlm --update-doc docs/qualification.md

  # re-apply the verdict rules to stored evidence, compare with last month
  trtmc-qual report --from out/demo --group vlm --rejudge --baseline out/old --format md`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Group == "" {
				return flagErrorf("--group is required")
			}
			if err := checkNames("--group", opts.Group); err != nil {
				return err
			}
			if err := checkFormatFlag(cmd); err != nil {
				return err
			}
			if err := checkReportOutputs(cmd, opts); err != nil {
				return err
			}
			if err := checkOutputFile("--output-file", opts.Output); err != nil {
				return err
			}
			if opts.ThresholdPct < 0 {
				return flagErrorf("--regression-threshold must be >= 0, got %v", opts.ThresholdPct)
			}
			if len(opts.From) == 0 {
				opts.From = []string{f.Config.Out}
			}
			opts.Now, opts.HarnessVersion, opts.Ctx, opts.Getenv = f.Now, f.Version, cmd.Context(), f.Getenv
			if runF != nil {
				return runF(opts)
			}
			return runReport(opts)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.From, "from", nil, "result root (an OUT directory of run); repeat to merge several (default: the configured out)")
	fl.StringVarP(&opts.Group, "group", "g", "", "the model group to report (required)")
	addFormatFlag(cmd, &opts.Format, reports.FormatAuto, reports.GroupFormats()...)
	addFileFlag(cmd, &opts.Output, "output-file", "write to this file (atomically) instead of stdout; its extension selects the format", "md", "csv", "json", "html", "tsv")
	// --output was the file flag's old name; it stays, hidden, so scripts
	// keep working, and gets the same extension rule: `--output json` is an
	// error that suggests --format json, never a TSV file named json.
	// (Not MarkDeprecated: cobra would print the notice on stdout, into the data.)
	fl.StringVar(&opts.Output, "output", "", "old name of --output-file")
	_ = fl.MarkHidden("output")
	addFileFlag(cmd, &opts.UpdateDoc, "update-doc", "rewrite the group's block between <!-- trtmc-qual:GROUP:begin/end --> markers in this Markdown page", "md", "markdown")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "with --update-doc: print the diff, write nothing")
	fl.BoolVar(&opts.Rejudge, "rejudge", false, "re-apply the verdict rules to stored evidence (writes result.rejudged.json, keeps result.json)")
	fl.StringArrayVar(&opts.Baseline, "baseline", nil, "result root of an earlier run to compare p50 latencies with; repeatable")
	fl.Float64Var(&opts.ThresholdPct, "regression-threshold", reports.DefaultRegressionThresholdPct, "percent p50 increase over --baseline marked as a regression")
	completeEvidenceGroups(cmd, f)
	_ = cmd.MarkFlagDirname("from")
	_ = cmd.MarkFlagDirname("baseline")
	return cmd
}

// checkReportOutputs settles where the report goes and in which format:
// --output-file's extension and --format must agree; --update-doc writes
// Markdown and excludes --output-file; --dry-run needs --update-doc.
func checkReportOutputs(cmd *cobra.Command, opts *reportOptions) error {
	flag := "output-file"
	if cmd.Flags().Changed("output") && cmd.Flags().Changed("output-file") {
		return flagErrorf("--output is the old name of --output-file; pass one of them")
	}
	if cmd.Flags().Changed("output") {
		flag = "output"
		fmt.Fprintln(opts.IO.ErrOut, "trtmc-qual: --output is the old name of --output-file FILE (the format is -o/--format)")
	}
	if cmd.Flags().Changed(flag) && opts.Output == "" {
		return flagErrorf("--%s needs a file name", flag)
	}
	if opts.UpdateDoc != "" {
		if opts.Output != "" {
			return flagErrorf("--update-doc and --%s both name a file to write; pass one", flag)
		}
		if opts.Format != reports.FormatAuto && opts.Format != reports.FormatMarkdown {
			return flagErrorf("--update-doc writes the Markdown report; --format %s does not fit (leave --format out)", opts.Format)
		}
		if err := checkFileKind("update-doc", opts.UpdateDoc, reports.FormatMarkdown); err != nil {
			return err
		}
		opts.Format = reports.FormatMarkdown
		return nil
	}
	if opts.DryRun {
		return flagErrorf("--dry-run only applies to --update-doc")
	}
	if opts.Output != "" {
		format, err := fileFormat(cmd, flag, opts.Output)
		if err != nil {
			return err
		}
		opts.Format = format
	}
	return nil
}

func runReport(opts *reportOptions) error {
	format := reports.Resolve(opts.Format, opts.IO.OutTTY)
	var rep *reports.GroupReport
	var err error
	if opts.Rejudge {
		// The join's index is about 150 bytes a request (no payloads, no
		// answers); a soft limit keeps the collector from letting garbage
		// double that at a million requests. GOMEMLIMIT overrides it.
		if opts.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(rejudgeMemoryLimit)
		}
		// The report is built from the rows re-derived now, never from the
		// result.rejudged.json files written beside them (outside the seal).
		var written []string
		rep, written, err = qual.Rejudge(opts.Ctx, qual.RejudgeOptions{Roots: opts.From, Group: opts.Group,
			Registry: families.DefaultRegistry(), Now: opts.Now(), HarnessVersion: opts.HarnessVersion, NoJoined: format != reports.FormatHTML})
		if err != nil {
			return evidenceError(err)
		}
		fmt.Fprintf(opts.IO.ErrOut, "report: re-judged %d result(s); originals kept, re-judged copies in %s\n", len(written), reports.RejudgedFile)
	} else {
		rep, err = reports.LoadWith(opts.From, opts.Group, reports.LoadOptions{NoJoined: format != reports.FormatHTML})
		if err != nil {
			return evidenceError(err)
		}
	}
	if len(opts.Baseline) > 0 {
		base, err := reports.Load(opts.Baseline, opts.Group)
		if err != nil {
			return evidenceError(fmt.Errorf("baseline: %w", err))
		}
		reports.ApplyBaseline(rep, base, opts.ThresholdPct)
	}
	if opts.Output != "" && opts.UpdateDoc == "" {
		// The HTML report links each row's evidence relative to the file.
		rep.LinkDir = filepath.Dir(opts.Output)
	}
	var buf bytes.Buffer
	if err := reports.Render(&buf, rep, format); err != nil {
		return err
	}
	if opts.UpdateDoc != "" {
		if err := updateDoc(opts, rep.Group, buf.Bytes()); err != nil {
			return err
		}
	} else if opts.Output != "" {
		if err := evidence.WriteFileMode(opts.Output, buf.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "report: wrote %s\n", opts.Output)
	} else if _, err := opts.IO.Out.Write(buf.Bytes()); err != nil {
		return err
	}
	if n := len(rep.Conflicts); n > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "report: %d profile(s) have conflicting results in several roots; the latest run of each is shown\n", n)
	}
	if !rep.Coverage.OK {
		return withCode(exitFailed, fmt.Errorf("group %s: %s", rep.Group, rep.Coverage.Summary))
	}
	return nil
}

// updateDoc rewrites the group's block of the page opts.UpdateDoc with
// table, or prints the diff with --dry-run. The page is replaced
// atomically with its permissions kept, and only when something changed.
func updateDoc(opts *reportOptions, group string, table []byte) error {
	path := opts.UpdateDoc
	// A page that is a symlink is updated where it lives; the link stays.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	info, err := os.Stat(path)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--update-doc: %w", err))
	}
	if !info.Mode().IsRegular() {
		return withCode(exitUsage, fmt.Errorf("--update-doc %s: not a regular file", path))
	}
	page, err := os.ReadFile(path)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--update-doc: %w", err))
	}
	updated, changed, err := reports.UpdateBlock(page, path, group, table)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if opts.DryRun {
		if _, err := io.WriteString(opts.IO.Out, reports.UnifiedDiff(path, path+" (updated)", page, updated)); err != nil {
			return err
		}
		if changed {
			fmt.Fprintf(opts.IO.ErrOut, "report: --dry-run: %s would change (block %s); nothing written\n", path, group)
		} else {
			fmt.Fprintf(opts.IO.ErrOut, "report: --dry-run: %s is up to date (block %s)\n", path, group)
		}
		return nil
	}
	if !changed {
		fmt.Fprintf(opts.IO.ErrOut, "report: %s is up to date (block %s)\n", path, group)
		return nil
	}
	if err := evidence.WriteFileMode(path, updated, info.Mode().Perm()); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "report: updated block %s of %s\n", group, path)
	return nil
}

// evidenceError maps the loader's errors to exit codes: a missing root or
// group is a usage error (2); anything else (an I/O failure) is 4. Malformed
// evidence never gets here: it is an error row.
func evidenceError(err error) error {
	if errors.Is(err, context.Canceled) {
		return err // interrupted: 130
	}
	if errors.Is(err, reports.ErrNoEvidence) {
		return withCode(exitUsage, err)
	}
	var ee *reports.EvidenceError
	if errors.As(err, &ee) {
		return withCode(exitFailed, err) // the evidence is bad, not the harness
	}
	return withCode(exitHarness, err)
}
