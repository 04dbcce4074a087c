package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/drift"
	"github.com/trtmc-qual/trtmc-qual/inventory/reconcile"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/stats"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
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
	// Link is where the full report is published, for --update-doc's
	// block ("" says how to get it), and the base of -o summary's
	// evidence links.
	Link string
	// Reconcile (a saved `inventory reconcile -o json`) and Repo/Ref (the
	// TRTMC checkout and ref to check it against, or to reconcile with
	// now) feed -o summary's inventory line.
	Reconcile string
	Repo, Ref string
	// Drift is a saved `inventory drift -o json` of the group's specs:
	// -o summary's "model specs, thresholds and contracts" line.
	Drift string
	// AllowIncomplete makes -o summary exit 0 when it says NOT complete
	// (for drafting one; CI leaves it out: NOT complete exits 1).
	AllowIncomplete bool
	// SpecGroups is the spec-groups file for reconciling now.
	SpecGroups string
	Rejudge    bool
	// Families is the family configuration a rejudge and a publication
	// (--update-doc, -o summary) take the judging criteria from ("": the
	// configuration shipped with the harness), never from the rows.
	Families string
	// Baseline are the result roots of an earlier run to compare with.
	Baseline     []string
	ThresholdPct float64
	// RunNoise is the --baseline rule's run-to-run component (sd of the
	// log of a run's median; stats.Rule.RunSD).
	RunNoise float64

	// Roots are --root NAME=DIR; Publish is what published formats map
	// (the declared roots, this host's roots and identity).
	Roots   []string
	Publish publish.Publisher
	// declared are Roots, parsed by Validate.
	declared []verdict.Root

	// OutputGiven and OutputFileGiven say --output (the old name) and
	// --output-file were given on the command line.
	OutputGiven, OutputFileGiven bool

	Now            func() time.Time
	HarnessVersion string
	Getenv         func(string) string
}

// reportFormats are report's -o/--format values.
var reportFormats = formats(reports.FormatAuto, reports.GroupFormats()...)

// rejudgeMemoryLimit is the Go runtime's soft memory limit during a rejudge.
const rejudgeMemoryLimit = 200 << 20

// reportLong is newReportCmd's help text.
var reportLong = `Regenerate a group's result tables from stored evidence alone, without running
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
line and field. The criteria a rejudge judges by (tolerances, comparators,
labels, the Task time source...) come from the family configuration
(--families FILE, else the one shipped with trtmc-qual) and the served model
from the row's inventory entry, never from the row: a stored criterion that
differs is itself a finding (criteria_differ). A row sealed with the retired
sha256-tree-1mib is never trusted as stored (seal_legacy), only re-judged.

What is published to others (-o summary, --update-doc) is made from the rows
re-derived that way (nothing written beside the evidence), and refused (exit
1, nothing written) when a row's stored verdict or figures differ from the
re-derived ones. --baseline compares each row with the same profile's row
of an earlier run, only like with like (bundle, precision, inventory entry,
workload, Task-time source, hardware scope and AIPerf version agree; else
"not comparable", naming each difference), from the per-request HTTP and Task
times of both sealed joined.jsonl (every trial's): regressed or improved only
when the change's 95% interval excludes zero and the change is at least
--regression-threshold percent, "no change" when the interval lies within
that, else inconclusive. A single run cannot show how much the whole run is
slower or faster than the next (on an H200, six runs of one configuration:
sd 0.073 of the log of their medians), so for each side that is a single run
the interval takes in --run-noise SD (default 0.075); with it two single runs
never call a change smaller than about +23% or -19%: compare trials (run
--trials 3 or more) to see 20%. A pair whose evidence does not hold its seal is not compared.

Formats: md (GitHub-flavoured Markdown, as in results.md), csv, json (schema
trtmc-qual/group-report/v1), html (self-contained, failure-first), table, tsv,
summary (the completion summary a pull request or issue closes with: the
seeds' headline — normal profiles in scope, measured and warmup requests,
matches, client errors, each row's own source commit, the inventory's
reconciled TRTMC commit (--reconcile FILE from inventory reconcile -o json,
checked against --repo's --ref, or reconciled now with --repo alone) —; one
line per model: precision and parallelism, bundle, source commit, correctness
gates (native / reference where the case states it), HTTP and Task p50/p95,
images/s, boxes or output tokens, image sizes and label space; the workload,
the caveat, whether the specs are unchanged (--drift FILE from inventory drift
-o json), exclusions, variants and partial profiles, the capability gaps, one
reproduce example and links into the evidence pack (--link BASE). Complete
only with the sealed inventory snapshot in the evidence, every normal profile
of it in scope qualified by a row run for its entry, no row that ran failed,
broke or was interrupted (a variant or partial profile that did not run is
listed apart, never blocking) and a current reconciliation; a group that is
not complete opens with what is missing). md, html and summary are published text: paths
are written relative to named roots ($OUT, $HARNESS, $TRTMC_REPO, ... and
--root NAME=DIR), host and user names never appear; csv, json and table keep
the exact evidence.
Without --format: table on a terminal, tsv when piped. --output-file FILE writes
the report to FILE atomically instead of stdout; the file's extension (.md,
.csv, .json, .html, .tsv) selects the format, and must agree with --format
when both are given. FILE (and --update-doc's PAGE), its links resolved, may not
lie inside a --from or --baseline root (exit 2): no report overwrites evidence.

--update-doc PAGE rewrites, in a Markdown page of the docs or of a pull
request, only the lines between

  <!-- trtmc-qual:GROUP:begin -->
  <!-- trtmc-qual:GROUP:end -->

with the group's docs block: no title of its own (its headings one level under
the page's heading above the markers), the summary, a compact table (profile,
checkpoint, precision, correctness, matched, errors, HTTP and Task p50/p95,
images/s, output, GPU, source commit, verdict; --link URL points at the full
report), coverage, reasons, and the reproduce commands collapsed. The page is
read with a 16 MiB cap and rewritten atomically under a lock on the page, so
concurrent updates never lose a block; a page another program changed
meanwhile is left alone (exit 3). Running it again with the same evidence
changes nothing. --dry-run prints the unified diff to stdout and writes
nothing. A missing, doubled or misordered marker is an error naming the line
(exit 2).

` + exitHelp(
	exitOutcome{exitOK, "when every counted normal profile is qualified (and the sealed inventory snapshot is in the evidence)"},
	exitOutcome{exitFailed, "when any row failed, broke (malformed or changed evidence included), was interrupted or was not run, " +
		"or the snapshot is missing or not sealed (a variant or partial profile that did not run never counts) — " +
		"with -o summary, 0 only when the summary says complete and 1 whenever it says NOT complete, unless --allow-incomplete (0: drafting) —"},
	exitOutcome{exitUsage, "for usage errors (an unknown format, a missing result root, a page that is missing or too large)"},
	exitOutcome{exitSetup, "when --update-doc's page is busy or changed during the update"},
	exitOutcome{exitHarness, "when a file cannot be written or read for a reason other than its content"})

// reportExample are newReportCmd's examples.
const reportExample = `  # the Markdown to paste into a pull request
  trtmc-qual report --from out/demo --group vlm --format md

  # merge two campaigns, latest run of each checkpoint wins
  trtmc-qual report --from out/a --from out/b --group detection --output-file detection.html

  # refresh the vlm table in a docs page (see the diff first)
  trtmc-qual report --from out/demo --group vlm --update-doc docs/qualification.md --dry-run
  trtmc-qual report --from out/demo --group vlm --update-doc docs/qualification.md

  # the completion summary for the pull request (exit 1 while NOT complete)
  trtmc-qual report --from out/demo --group vlm -o summary --reconcile vlm-reconcile.json --repo "$TRTMC_REPO" \
      --drift vlm-drift.json

  # a draft of it while rows are missing (exit 0; it still says NOT complete)
  trtmc-qual report --from out/demo --group vlm -o summary --allow-incomplete

  # re-apply the verdict rules to stored evidence, compare with last month
  trtmc-qual report --from out/demo --group vlm --rejudge --baseline out/old --format md`

func newReportCmd(f *factory, runF func(*reportOptions) error) *cobra.Command {
	opts := &reportOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:     "report --group G [--from OUT ...]",
		Short:   "Regenerate a group's result tables from stored evidence",
		Long:    reportLong,
		Example: reportExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.OutputGiven, opts.OutputFileGiven = cmd.Flags().Changed("output"), cmd.Flags().Changed("output-file")
			if err := opts.Validate(); err != nil {
				return err
			}
			if len(opts.From) == 0 {
				opts.From = []string{f.Config.Out}
			}
			opts.Publish = publicOptions(f.Config, f.Getenv, opts.declared)
			opts.Now, opts.HarnessVersion, opts.Getenv = f.Now, f.Version, f.Getenv
			opts.SpecGroups, opts.Families = f.Config.SpecGroups, f.Config.Families
			if runF != nil {
				return runF(opts)
			}
			return evidenceGroupHint(runReport(cmd.Context(), opts), opts.From, opts.Group)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.From, "from", nil, "result root (an OUT directory of run); repeat to merge several (default: the configured out)")
	fl.StringVarP(&opts.Group, "group", "g", "", "the model group to report (required)")
	addFormatFlag(cmd, &opts.Format, reportFormats)
	addFileFlag(cmd, &opts.Output, "output-file", "write to this file (atomically) instead of stdout; its extension selects the format", "md", "csv", "json", "html", "tsv")
	// --output was the file flag's old name; it stays, hidden, so scripts
	// keep working, and gets the same extension rule: `--output json` is an
	// error that suggests --format json, never a TSV file named json.
	// (Not MarkDeprecated: cobra would print the notice on stdout, into the data.)
	fl.StringVar(&opts.Output, "output", "", "old name of --output-file")
	_ = fl.MarkHidden("output")
	addFileFlag(cmd, &opts.UpdateDoc, "update-doc", "rewrite the group's block between <!-- trtmc-qual:GROUP:begin/end --> markers in this Markdown page", "md", "markdown")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "with --update-doc: print the diff, write nothing")
	fl.StringVar(&opts.Link, "link", "", "with --update-doc: URL (or path from the page) of the full report, linked from the block; with -o summary: where the evidence pack is published, the base of its links")
	addFileFlag(cmd, &opts.Reconcile, "reconcile", "with -o summary: a saved `FILE` of the group's inventory reconcile -o json, for the inventory's reconciled commit", "json")
	fl.StringVar(&opts.Repo, "repo", "", "with -o summary: the TRTMC checkout: whether the reconciled commit is --ref's head (or, without --reconcile, reconcile the evidence's inventory now)")
	fl.StringVar(&opts.Ref, "ref", "main", "with -o summary --repo: the ref the inventory must be current with")
	addFileFlag(cmd, &opts.Drift, "drift", "with -o summary: a saved `FILE` of inventory drift -o json over the group: whether its model specs, thresholds and contracts are unchanged", "json")
	fl.BoolVar(&opts.AllowIncomplete, "allow-incomplete", false, "with -o summary: exit 0 when the summary says NOT complete (drafting one; the summary still says it)")
	fl.BoolVar(&opts.Rejudge, "rejudge", false, "re-apply the verdict rules to stored evidence (writes result.rejudged.json, keeps result.json)")
	fl.String("families", "", "with --rejudge, --update-doc and -o summary: the family configuration the rows are judged by (default: the one shipped with trtmc-qual)")
	fl.StringArrayVar(&opts.Baseline, "baseline", nil, "result root of an earlier run to compare each comparable row's per-request times with (sealed joined.jsonl of both); repeatable")
	fl.Float64Var(&opts.ThresholdPct, "regression-threshold", reports.DefaultRegressionThresholdPct,
		"the --baseline rule's minimum effect in `PCT`: a change is called only when its 95% interval excludes zero and it is at least this large (default from make bench part 6, docs/reports.md)")
	fl.Float64Var(&opts.RunNoise, "run-noise", stats.DefaultRunSD,
		"the --baseline rule's run-to-run noise, the standard deviation of the log of a run's median between runs (`SD`, 0 <= SD < 1), added for each side that is a single run; "+
			"the default is the H200's (six runs of ref-vlm-gpu); measure your hardware's with make bench part 5; 0: the interval within the runs alone, only for runs known to share one server and host state")
	addRootFlag(cmd, &opts.Roots)
	completeEvidenceGroups(cmd, f)
	_ = cmd.MarkFlagDirname("from")
	_ = cmd.MarkFlagDirname("baseline")
	return cmd
}

// Validate checks the flags together: a group and its name, the format,
// where the report goes (checkOutputs), the threshold and the --root
// values (parsed into declared).
func (o *reportOptions) Validate() error {
	if o.Group == "" {
		return flagErrorf("--group is required")
	}
	if err := checkNames("--group", o.Group); err != nil {
		return err
	}
	if err := reportFormats.check(o.Format); err != nil {
		return err
	}
	if err := o.checkOutputs(); err != nil {
		return err
	}
	if err := checkOutputFile("--output-file", o.Output); err != nil {
		return err
	}
	if !(o.ThresholdPct >= 0 && o.ThresholdPct < 1000) {
		return flagErrorf("--regression-threshold is the baseline rule's minimum effect in percent: want 0 <= PCT < 1000, got %v", o.ThresholdPct)
	}
	if !(o.RunNoise >= 0 && o.RunNoise < 1) {
		return flagErrorf("--run-noise is the standard deviation of the log of a run's median between runs: want 0 <= SD < 1, got %v", o.RunNoise)
	}
	declared, err := parseRoots(o.Roots)
	if err != nil {
		return err
	}
	o.declared = declared
	return nil
}

// checkOutputs settles where the report goes and in which format:
// --output-file's extension and --format must agree; --update-doc writes
// Markdown and excludes --output-file; --dry-run needs --update-doc.
func (o *reportOptions) checkOutputs() error {
	flag := "output-file"
	if o.OutputGiven && o.OutputFileGiven {
		return flagErrorf("--output is the old name of --output-file; pass one of them")
	}
	if o.OutputGiven {
		flag = "output"
		fmt.Fprintln(o.IO.ErrOut, "trtmc-qual: --output is the old name of --output-file FILE (the format is -o/--format)")
	}
	if (o.OutputGiven || o.OutputFileGiven) && o.Output == "" {
		return flagErrorf("--%s needs a file name", flag)
	}
	if o.UpdateDoc != "" {
		if o.Output != "" {
			return flagErrorf("--update-doc and --%s both name a file to write; pass one", flag)
		}
		if o.Format != reports.FormatAuto && o.Format != reports.FormatMarkdown {
			return flagErrorf("--update-doc writes the Markdown report; --format %s does not fit (leave --format out)", o.Format)
		}
		if err := checkFileKind("update-doc", o.UpdateDoc, reports.FormatMarkdown); err != nil {
			return err
		}
		o.Format = reports.FormatMarkdown
		return nil
	}
	if o.DryRun {
		return flagErrorf("--dry-run only applies to --update-doc")
	}
	if (o.Reconcile != "" || o.Repo != "" || o.Drift != "" || o.AllowIncomplete) && o.Format != reports.FormatSummary {
		return flagErrorf("--reconcile, --repo, --drift and --allow-incomplete only apply to --format summary")
	}
	if o.Output != "" {
		format, err := reportFormats.fileFormat("trtmc-qual report", flag, o.Output, o.Format)
		if err != nil {
			return err
		}
		o.Format = format
	}
	return nil
}

func runReport(ctx context.Context, opts *reportOptions) error {
	trees := append(append([]string{}, opts.From...), opts.Baseline...)
	if err := checkOutsideEvidence("--output-file", opts.Output, trees...); err != nil {
		return err
	}
	if !opts.DryRun {
		if err := checkOutsideEvidence("--update-doc", opts.UpdateDoc, trees...); err != nil {
			return err
		}
	}
	format := reports.Resolve(opts.Format, opts.IO.OutTTY)
	rep, err := reportRows(ctx, opts, format)
	if err != nil {
		return err
	}
	rep.Publisher = opts.Publish
	if format == reports.FormatSummary {
		fact, err := summaryReconcile(ctx, opts)
		if err != nil {
			return err
		}
		drift, err := summaryDrift(ctx, opts.Drift, opts.Group)
		if err != nil {
			return err
		}
		rep.Summary = reports.SummaryOptions{Reconcile: fact, Drift: drift, Link: opts.Link}
	}
	if len(opts.Baseline) > 0 {
		base, err := reports.Load(opts.Baseline, opts.Group)
		if err != nil {
			return evidenceError(fmt.Errorf("baseline: %w", err))
		}
		if err := reports.ApplyBaseline(rep, base, reports.BaselineRule(opts.ThresholdPct, opts.RunNoise)); err != nil {
			return err
		}
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
		if err := updateDoc(ctx, opts, rep); err != nil {
			return err
		}
	} else if opts.Output != "" {
		if err := fileio.WriteFileMode(opts.Output, buf.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "report: wrote %s\n", opts.Output)
	} else if _, err := opts.IO.Out.Write(buf.Bytes()); err != nil {
		return err
	}
	if n := len(rep.Conflicts); n > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "report: %d profile(s) have conflicting results in several roots; the latest run of each is shown\n", n)
	}
	if format == reports.FormatSummary {
		// The summary's own verdict is the exit status: NOT complete is 1,
		// whatever is missing (a row, the sealed snapshot, a current
		// reconciliation).
		if missing := reports.Incomplete(rep); len(missing) > 0 {
			err := fmt.Errorf("group %s: NOT complete: %d %s missing (the summary lists %s)", rep.Group,
				len(missing), text.Plural(len(missing), "thing", "things"), text.Plural(len(missing), "it", "them"))
			if opts.AllowIncomplete {
				fmt.Fprintf(opts.IO.ErrOut, "report: %v; exit 0 (--allow-incomplete)\n", err)
				return nil
			}
			return withCode(exitFailed, err)
		}
		return nil
	}
	if !rep.Coverage.OK {
		return withCode(exitFailed, fmt.Errorf("group %s: %s", rep.Group, rep.Coverage.Summary))
	}
	return nil
}

// reportRows are the rows the report shows: as stored (each checked
// against its seal); with --rejudge, re-derived from the raw artifacts;
// for what is published to others (--update-doc, -o summary), re-derived
// and checked against the stored rows — a row whose stored verdict or
// figures differ refuses the publication, exit 1. A rejudge and a
// publication take the judging criteria from the family configuration
// (--families, else the shipped one), never from the rows.
func reportRows(ctx context.Context, opts *reportOptions, format string) (*reports.GroupReport, error) {
	publishing := format == reports.FormatSummary || opts.UpdateDoc != ""
	if !opts.Rejudge && !publishing {
		rep, err := reports.LoadWith(opts.From, opts.Group, reports.LoadOptions{NoJoined: format != reports.FormatHTML})
		if err != nil {
			return nil, evidenceError(err)
		}
		return rep, nil
	}
	fams, err := judgingFamilies(opts.Families)
	if err != nil {
		return nil, err
	}
	// The join's index is about 150 bytes a request (no payloads, no
	// answers); a soft limit keeps the collector from letting garbage
	// double that at a million requests. GOMEMLIMIT overrides it.
	if opts.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(rejudgeMemoryLimit)
	}
	// The report is built from the rows re-derived now, never from the
	// result.rejudged.json files written beside them (outside the seal).
	ro := qual.RejudgeOptions{Roots: opts.From, Group: opts.Group, Families: fams, Registry: families.DefaultRegistry(),
		Now: opts.Now(), HarnessVersion: opts.HarnessVersion, NoJoined: format != reports.FormatHTML, NoWrite: !opts.Rejudge}
	var rep *reports.GroupReport
	var written []string
	if publishing {
		rep, written, err = qual.Publishable(ctx, ro)
	} else {
		rep, written, err = qual.Rejudge(ctx, ro)
	}
	if err != nil {
		return nil, publicationError(err)
	}
	if opts.Rejudge {
		fmt.Fprintf(opts.IO.ErrOut, "report: re-judged %d result(s); originals kept, re-judged copies in %s\n", len(written), reports.RejudgedFile)
	}
	return rep, nil
}

// judgingFamilies is the family configuration a rejudge or a publication
// judges rows by: the one named (--families, TRTMC_QUAL_FAMILIES, the
// config file), else the one shipped with the harness.
func judgingFamilies(file string) (*families.Config, error) {
	if file != "" {
		return loadFamilies(file)
	}
	fams, err := families.Shipped()
	if err != nil {
		return nil, err // a harness built with a broken shipped configuration
	}
	return fams, nil
}

// publicationError gives a publication's refusal its status: stored
// figures that are not the re-derived ones are the evidence's fault (1).
func publicationError(err error) error {
	var fe *publish.FigureError
	if errors.As(err, &fe) {
		return withCode(exitFailed, err)
	}
	return evidenceError(err)
}

// docLockWait is how long --update-doc waits for another update of the
// same page to finish.
const docLockWait = 60 * time.Second

// updateDoc rewrites the group's block of the page opts.UpdateDoc with
// the docs block (its headings one level under the page's heading above
// the markers), or prints the diff with --dry-run. The page is read with
// a cap; the rewrite holds the page's lock and refuses if another program
// changed the page meanwhile (fileio.UpdateFile), so two updates of one
// page never lose a block; it is atomic, keeps the file's permissions and
// writes only when something changed.
func updateDoc(ctx context.Context, opts *reportOptions, rep *reports.GroupReport) error {
	path, group := opts.UpdateDoc, rep.Group
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
	rewrite := func(page []byte) ([]byte, error) {
		blk, err := reports.FindBlock(page, path, group)
		if err != nil {
			return nil, withCode(exitUsage, err)
		}
		var block bytes.Buffer
		if err := reports.RenderDocBlock(&block, rep, reports.DocBlockOptions{HeadingLevel: blk.HeadingLevel, Link: opts.Link}); err != nil {
			return nil, err
		}
		return blk.Replace(page, block.Bytes()), nil
	}
	if opts.DryRun {
		page, err := fileio.ReadFile(ctx, path, reports.MaxPageBytes)
		if err != nil {
			return pageError(err)
		}
		updated, err := rewrite(page)
		if err != nil {
			return err
		}
		if err := reports.WriteUnifiedDiff(opts.IO.Out, path, path+" (updated)", page, updated); err != nil {
			return err
		}
		if !bytes.Equal(page, updated) {
			fmt.Fprintf(opts.IO.ErrOut, "report: --dry-run: %s would change (block %s); nothing written\n", path, group)
		} else {
			fmt.Fprintf(opts.IO.ErrOut, "report: --dry-run: %s is up to date (block %s)\n", path, group)
		}
		return nil
	}
	changed, err := fileio.UpdateFile(ctx, path, reports.MaxPageBytes, docLockWait, rewrite)
	if err != nil {
		var busy *fileio.BusyError
		var moved *fileio.ChangedError
		if errors.As(err, &busy) || errors.As(err, &moved) {
			return withCode(exitSetup, err) // retried later, the same command succeeds
		}
		return pageError(err)
	}
	if !changed {
		fmt.Fprintf(opts.IO.ErrOut, "report: %s is up to date (block %s)\n", path, group)
		return nil
	}
	fmt.Fprintf(opts.IO.ErrOut, "report: updated block %s of %s\n", group, path)
	return nil
}

// pageError gives a page that cannot be read its exit status: missing,
// not a regular file or over the cap is the user's (2).
func pageError(err error) error {
	var coded *codedError
	switch {
	case errors.As(err, &coded):
		return err
	case errors.Is(err, os.ErrNotExist), errors.Is(err, fileio.ErrNotRegular), errors.Is(err, fileio.ErrTooLarge):
		return withCode(exitUsage, fmt.Errorf("--update-doc: %w", err))
	}
	return err
}

// summaryReconcile is the inventory line's fact for -o summary: the saved
// reconciliation (--reconcile), checked against --ref's head in --repo;
// without --reconcile, a reconciliation of the evidence's inventory
// snapshot at --ref now; nil when neither is given.
func summaryReconcile(ctx context.Context, opts *reportOptions) (*reports.ReconcileFact, error) {
	var fact *reports.ReconcileFact
	if opts.Reconcile != "" {
		r, err := reconcile.ReadReport(ctx, opts.Reconcile, opts.Group)
		if err != nil {
			return nil, savedReportError("--reconcile", err)
		}
		fact = &reports.ReconcileFact{Ref: r.Ref, Commit: r.Commit, Normal: r.Summary.Normal, NeedAction: r.Summary.NeedAction}
	}
	if opts.Repo == "" {
		return fact, nil
	}
	if fact == nil {
		return reconcileNow(ctx, opts)
	}
	head, err := gitCLI(opts.Repo).Commit(ctx, opts.Ref)
	if err != nil {
		return nil, err
	}
	fact.Ref, fact.Head = opts.Ref, head
	return fact, nil
}

// summaryDrift is -o summary's drift fact: the saved `inventory drift -o
// json` (--drift), its schema checked and the group among those it
// checked; its changes are the ones of the group's families (and those no
// group could be told for); nil without --drift.
func summaryDrift(ctx context.Context, file, group string) (*reports.DriftFact, error) {
	if file == "" {
		return nil, nil
	}
	r, err := drift.ReadReport(ctx, file, group)
	if err != nil {
		return nil, savedReportError("--drift", err)
	}
	f := &reports.DriftFact{Base: r.Base, BaseCommit: r.BaseCommit, Head: r.Head, HeadCommit: r.HeadCommit, Families: len(r.Families)}
	f.Changes, f.ByCategory = r.GroupChanges(group)
	return f, nil
}

// savedReportError gives a saved report that cannot be read (--reconcile,
// --drift) its exit status: the user's (2), unless interrupted.
func savedReportError(flag string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return withCode(exitUsage, fmt.Errorf("%s: %w", flag, err))
}

// reconcileNow reconciles the evidence's inventory snapshot (the first
// root's) with the specs at --ref.
func reconcileNow(ctx context.Context, opts *reportOptions) (*reports.ReconcileFact, error) {
	cfg, err := specs.LoadConfig(opts.SpecGroups)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckGroup(opts.Group); err != nil {
		return nil, &flagError{err}
	}
	path := filepath.Join(opts.From[0], opts.Group, reports.InventoryFile)
	profiles, err := inventory.ReadSnapshot(ctx, path)
	var bad *fileio.JSONError
	switch {
	case errors.As(err, &bad):
		return nil, withCode(exitFailed, err) // the evidence is bad
	case errors.Is(err, context.Canceled):
		return nil, err
	case err != nil:
		return nil, withCode(exitUsage, fmt.Errorf("-o summary --repo reconciles the evidence's inventory: %w", err))
	}
	inv := &inventory.Inventory{Groups: map[string]*inventory.Group{opts.Group: {Name: opts.Group, Profiles: profiles}}}
	snap, err := specs.Source{Git: gitCLI(opts.Repo), Config: cfg, Repo: opts.Repo}.Read(ctx, opts.Ref)
	if err != nil {
		return nil, err
	}
	r := reconcile.Reconcile(cfg, snap, inv, opts.Group)
	return &reports.ReconcileFact{Ref: r.Ref, Commit: r.Commit, Head: r.Commit, Normal: r.Summary.Normal, NeedAction: r.Summary.NeedAction}, nil
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
	var ee *verdict.EvidenceError
	if errors.As(err, &ee) {
		return withCode(exitFailed, err) // the evidence is bad, not the harness
	}
	return withCode(exitHarness, err)
}
