package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/publish/export"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

type exportOptions struct {
	IO      *IOStreams
	From    []string
	Group   string
	Output  string
	Logs    string
	LogTail int
	Roots   []string
	Forbid  []string
	// Reconcile, Repo and Ref feed the pack's summary.md as for
	// `report -o summary`.
	Reconcile, Repo, Ref string
	// Drift is a saved `inventory drift -o json`, for the pack's
	// summary.md, as for `report -o summary --drift`.
	Drift string

	// declared are Roots, parsed by Validate; Publish adds this host's
	// roots and identity.
	declared []verdict.Root
	Publish  publish.Publisher
	// Secrets are the values of the configured secret variables, which
	// the leak scan looks for in every encoding.
	Secrets        []string
	SpecGroups     string
	Now            func() time.Time
	HarnessVersion string
	// Families is the family configuration the rows are re-derived by
	// before anything is published ("": the shipped one).
	Families string
}

// exportLong is newExportCmd's help text.
var exportLong = `Write a group's public evidence pack: every file a re-judge needs, the run
host's paths mapped to named roots ($OUT, $HARNESS, $TRTMC_REPO, ... and
--root NAME=DIR), host and user names removed, sealed again over what it holds
(each row's manifest.json and PACK.json record the original seal it came from
and what was done to each file), with the group's tables and the completion
summary (summary.md) rendered from the pack's own evidence.

The files the join reads (dataset.jsonl, AIPerf's records and raw exports,
server_records.jsonl, native_answers.jsonl) are published byte for byte, so a
re-judge joins exactly what the run joined; every other file is scrubbed line
by line. Logs are left out unless --logs tail (the last --log-tail lines) or
--logs full.

Before anything is packed, every row is re-derived from its raw artifacts by
the family configuration (--families FILE, else the one shipped with
trtmc-qual), as report --rejudge does: a row whose stored verdict or figures
differ from the re-derived ones refuses the pack (exit 1). The pack's rows
record the pack's own inventory snapshot where the original's held theirs.

Before anything is written, everything the pack would publish is scanned,
whole (a log before --logs tail cuts it), raw and JSON-escaped, URL-encoded and
base64-encoded, for what must not leave this host: absolute paths outside the
named roots, the host names of this host and of the rows, user and home names,
IP addresses other than loopback, the values of the configured secret
variables, credentials by their shape (a value assigned to a name like
*TOKEN*, *SECRET*, *PASSWORD*, *KEY*, *API_KEY* or X-Api-Key, URL userinfo,
bearer and basic authorisation, PEM blocks, hub and cloud tokens), and
--forbid strings. Anything found refuses the pack, naming file and line, and
nothing is written. A row whose evidence differs from its seal, a group with no
rows, an existing PACK, or a PACK that (its links resolved) lies inside a
--from root is refused too. The pack is staged in a private directory in the
system's temporary directory, removed when export ends, on a signal too.

  tar xzf PACK.tar.gz -C DIR && trtmc-qual report --from DIR/PACK --group G --rejudge

re-derives the same verdicts and figures on another machine.

` + exitHelp(
	exitOutcome{exitOK, "written"},
	exitOutcome{exitFailed, "refused (a leak, a row whose evidence changed, a stored figure that is not the re-derived one)"},
	exitOutcome{exitUsage, "usage (an existing PACK, not a .tar.gz, a PACK inside the evidence, no rows, a missing result root)"},
	exitOutcome{exitInterrupted, "interrupted (the staging directory removed)"})

// exportExample are newExportCmd's examples.
const exportExample = `  # the pack for the pull request, logs left out
  trtmc-qual export --from out/demo --group vlm --output-file vlm-evidence.tar.gz

  # logs cut to their last 50 lines; a bundle store outside the checkout named
  trtmc-qual export --from out/trtmc --group vlm --output-file vlm.tar.gz --logs tail --log-tail 50 --root BUNDLES=/data/bundles`

func newExportCmd(f *factory, runF func(*exportOptions) error) *cobra.Command {
	opts := &exportOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:     "export --from OUT --group G --output-file PACK.tar.gz",
		Short:   "Write a group's public evidence pack, scrubbed, sealed again and checked for leaks",
		Long:    exportLong,
		Example: exportExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			if len(opts.From) == 0 {
				opts.From = []string{f.Config.Out}
			}
			opts.Publish = publicOptions(f.Config, f.Getenv, opts.declared)
			opts.Secrets = secretValues(f.Config.Secrets, f.Getenv)
			opts.SpecGroups, opts.Now, opts.HarnessVersion, opts.Families = f.Config.SpecGroups, f.Now, f.Version, f.Config.Families
			if runF != nil {
				return runF(opts)
			}
			return evidenceGroupHint(runExport(cmd.Context(), opts), opts.From, opts.Group)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.From, "from", nil, "result root (an OUT directory of run); repeat to merge several (default: the configured out)")
	fl.StringVarP(&opts.Group, "group", "g", "", "the model group to export (required)")
	fl.StringVar(&opts.Output, "output-file", "", "the pack to write, PACK.tar.gz (never overwritten; PACK is its top directory)")
	_ = cmd.MarkFlagFilename("output-file", "tar.gz", "tgz")
	fl.StringVar(&opts.Logs, "logs", export.LogsNone, "logs in the pack: none, tail (the last --log-tail lines) or full; scrubbed either way")
	fl.IntVar(&opts.LogTail, "log-tail", export.DefaultLogTail, "with --logs tail: lines kept per log")
	addRootFlag(cmd, &opts.Roots)
	fl.StringArrayVar(&opts.Forbid, "forbid", nil, "a string that must not be in the pack (an internal host or project name); repeatable")
	addFileFlag(cmd, &opts.Reconcile, "reconcile", "a saved `FILE` of the group's inventory reconcile -o json, for the pack's summary.md", "json")
	fl.StringVar(&opts.Repo, "repo", "", "the TRTMC checkout, for the summary's reconciliation (see report -o summary)")
	fl.StringVar(&opts.Ref, "ref", "main", "with --repo: the ref the inventory must be current with")
	addFileFlag(cmd, &opts.Drift, "drift", "a saved `FILE` of inventory drift -o json over the group, for the pack's summary.md", "json")
	fl.String("families", "", "the family configuration the rows are re-derived by before they are published (default: the one shipped with trtmc-qual)")
	completeEvidenceGroups(cmd, f)
	_ = cmd.MarkFlagDirname("from")
	return cmd
}

// Validate checks the flags together: a group and its name, the pack's
// file, --logs and --log-tail, and the --root values (parsed into
// declared).
func (o *exportOptions) Validate() error {
	if o.Group == "" {
		return flagErrorf("--group is required")
	}
	if err := checkNames("--group", o.Group); err != nil {
		return err
	}
	if o.Output == "" {
		return flagErrorf("--output-file PACK.tar.gz is required")
	}
	switch o.Logs {
	case export.LogsNone, export.LogsTail, export.LogsFull:
	default:
		return flagErrorf("--logs %q: valid values are %s, %s, %s", o.Logs, export.LogsNone, export.LogsTail, export.LogsFull)
	}
	if o.LogTail <= 0 {
		return flagErrorf("--log-tail must be > 0, got %d", o.LogTail)
	}
	declared, err := parseRoots(o.Roots)
	if err != nil {
		return err
	}
	o.declared = declared
	return nil
}

// secretValues are the set values of the named secret variables.
func secretValues(names []string, getenv func(string) string) []string {
	var secrets []string
	for _, name := range names {
		if v := getenv(name); v != "" {
			secrets = append(secrets, v)
		}
	}
	return secrets
}

func runExport(ctx context.Context, opts *exportOptions) error {
	// Where the pack goes is a usage question, answered before any row is
	// re-derived: a pack inside the evidence is refused at once (exit 2).
	if err := export.CheckOutput(opts.Output, opts.From); err != nil {
		return withCode(exitUsage, err)
	}
	ropts := &reportOptions{From: opts.From, Group: opts.Group, Reconcile: opts.Reconcile,
		Repo: opts.Repo, Ref: opts.Ref, SpecGroups: opts.SpecGroups}
	fact, err := summaryReconcile(ctx, ropts)
	if err != nil {
		return err
	}
	drift, err := summaryDrift(ctx, opts.Drift, opts.Group)
	if err != nil {
		return err
	}
	// What is published is what the evidence gives: every row re-derived
	// by the family configuration, and the pack refused when a row's
	// stored verdict or figures are not the re-derived ones.
	fams, err := judgingFamilies(opts.Families)
	if err != nil {
		return err
	}
	if _, _, err := qual.Publishable(ctx, qual.RejudgeOptions{Roots: opts.From, Group: opts.Group, Families: fams,
		Registry: families.DefaultRegistry(), Now: opts.Now(), HarnessVersion: opts.HarnessVersion, NoJoined: true, NoWrite: true}); err != nil {
		return publicationError(err)
	}
	res, err := export.Export(ctx, export.Options{Roots: opts.From, Group: opts.Group, Output: opts.Output,
		Logs: opts.Logs, LogTail: opts.LogTail, Publish: opts.Publish, Secrets: opts.Secrets, Forbid: opts.Forbid,
		Summary: reports.SummaryOptions{Reconcile: fact, Drift: drift}, Now: opts.Now(), HarnessVersion: opts.HarnessVersion})
	var input *export.InputError
	var seal *export.SealError
	var leak *export.LeakError
	switch {
	case err == nil:
	case errors.As(err, &input), errors.Is(err, reports.ErrNoEvidence):
		return withCode(exitUsage, err)
	case errors.As(err, &seal), errors.As(err, &leak), errors.Is(err, fileio.ErrTooLarge), errors.Is(err, fileio.ErrNotRegular):
		return withCode(exitFailed, err) // the evidence cannot be published, not a harness failure
	default:
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "export: wrote %s: %d %s, %d files, %s; re-judge it anywhere with:\n  tar xzf %s -C DIR && trtmc-qual report --from DIR/%s --group %s --rejudge\n",
		res.Path, res.Rows, map[bool]string{true: "row", false: "rows"}[res.Rows == 1], res.Files, humanSize(res.Bytes), res.Path, packTop(res.Path), opts.Group)
	return nil
}

// packTop is the directory a pack extracts to.
func packTop(p string) string {
	base := filepath.Base(p)
	for _, ext := range []string{".tar.gz", ".tgz"} {
		if n, ok := strings.CutSuffix(base, ext); ok {
			return n
		}
	}
	return base
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
