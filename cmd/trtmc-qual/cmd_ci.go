package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/qual/ci"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// SmokeFunc runs a smoke qualification of one group (ci.SmokeFunc); the
// root wires it to the run pipeline.
type SmokeFunc = ci.SmokeFunc

type ciOptions struct {
	IO          *IOStreams
	Repo        string
	Base        string
	Head        string
	Groups      []string
	RunSmoke    bool
	SmokeGroups []string
	JUnit       string
	Summary     string
	Format      string
	SpecGroups  string
	Inventory   []string
	Families    string
	Now         func() time.Time
	NewGit      func(repo string) gitread.Repo
	// Smoke qualifies a group for --smoke; nil means this build cannot, and
	// --smoke is then a setup error.
	Smoke SmokeFunc
	// Out is the evidence root of --smoke's qualifications (OUT/ci-smoke;
	// "" without --smoke): --junit and --summary may not be written inside
	// it.
	Out string
	// Publish maps the JUnit file and the Markdown summary, which others
	// read (the pull request, the CI system): the TRTMC checkout is
	// $TRTMC_REPO, the evidence root $OUT, this host's roots and names.
	Publish publish.Publisher
}

// newCICmd builds `trtmc-qual ci`. smoke may be nil until the run pipeline
// is wired in.
func newCICmd(f *factory, smoke SmokeFunc, runF func(*ciOptions) error) *cobra.Command {
	opts := &ciOptions{IO: f.IO, NewGit: gitCLI, Smoke: smoke}
	cmd := &cobra.Command{
		Use:   "ci --repo PATH --base main",
		Short: "The premerge job: validate, reconcile, drift check, optional smoke run",
		Long: `The premerge job of a qualification pull request, as named steps:

  validate-inventory   the inventory files parse and validate
  validate-families    the family configuration parses and validates
  reconcile-<group>    the inventory group agrees with the specs at --base
  drift-<group>        no manifest, MODEL.toml, threshold or reference of the
                       group's families differs between --base and --head
  smoke-<group>        a smoke qualification of the group (--smoke only)

Groups default to those both in the inventory and in the spec-groups file.
Every step runs even when an earlier one fails (reconcile is skipped when the
inventory is invalid). Each step becomes a JUnit test case (--junit FILE) and
a line of a Markdown summary for a pull-request comment (--summary FILE, also
printed to stdout unless --format json). Both files are written atomically.

` + exitHelp(
			exitOutcome{exitOK, "all passed (the largest of the steps' statuses)"},
			exitOutcome{exitFailed, "a check failed"},
			exitOutcome{exitUsage, "configuration, inventory or usage error"},
			exitOutcome{exitSetup, "setup error (git missing, smoke qualification unavailable)"},
			exitOutcome{exitInterrupted, "interrupted"}),
		Example: `  trtmc-qual ci --repo ../TensorRT-Model-Connect --base origin/main --head HEAD \
    --junit out/ci/junit.xml --summary out/ci/summary.md
  trtmc-qual ci --repo ../TensorRT-Model-Connect --base main --group vlm --smoke`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			opts.SpecGroups = f.Config.SpecGroups
			opts.Inventory = f.Config.Inventory
			opts.Families = f.Config.Families
			opts.Now = f.Now
			opts.Publish = publicOptions(f.Config, f.Getenv, []verdict.Root{{Name: publish.RootTRTMC, Path: fileio.Abs(opts.Repo)},
				{Name: publish.RootOut, Path: fileio.Abs(f.Config.Out)}})
			if opts.RunSmoke {
				f.Interrupts.SetNotice(noticeChildren)
				opts.Out = smokeOut(f.Config.Out)
			}
			if runF != nil {
				return runF(opts)
			}
			return runCI(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Repo, "repo", "", "TRTMC repository: a checkout or a bare git directory (required)")
	fl.StringVar(&opts.Base, "base", "main", "the base ref: specs the inventory must agree with")
	fl.StringVar(&opts.Head, "head", "HEAD", "the head ref compared with the base for drift")
	fl.StringSliceVarP(&opts.Groups, "group", "g", nil, "only these groups (default: groups of both the inventory and the spec-groups file)")
	fl.BoolVar(&opts.RunSmoke, "smoke", false, "also run a smoke qualification of each smoke group")
	fl.StringSliceVar(&opts.SmokeGroups, "smoke-group", nil, "groups to smoke-qualify with --smoke (default: the checked groups)")
	addFileFlag(cmd, &opts.JUnit, "junit", "write a JUnit XML report to this file", "xml")
	addFileFlag(cmd, &opts.Summary, "summary", "write the Markdown summary to this file", "md")
	addFormatFlag(cmd, &opts.Format, ciFormats)
	addSpecGroupsFlag(cmd)
	addInventoryFlags(fl)
	addAIPerfFlags(fl)
	markInputFiles(cmd)
	completeSpecGroupsFlag(cmd, f, "group")
	completeSpecGroupsFlag(cmd, f, "smoke-group")
	_ = cmd.MarkFlagDirname("repo")
	return cmd
}

// ciFormats are ci's -o/--format values.
var ciFormats = formats(reports.FormatMarkdown, reports.FormatMarkdown, reports.FormatJSON)

// Validate checks the flags together: a repository, the format, the
// report files' kinds, and that --smoke has a qualification to run.
func (o *ciOptions) Validate() error {
	if o.Repo == "" {
		return flagErrorf("--repo is required (a TRTMC checkout or bare repository)")
	}
	if err := ciFormats.check(o.Format); err != nil {
		return err
	}
	if err := checkFileKind("junit", o.JUnit, "xml"); err != nil {
		return err
	}
	if err := checkFileKind("summary", o.Summary, reports.FormatMarkdown); err != nil {
		return err
	}
	if o.RunSmoke && o.Smoke == nil {
		return withCode(exitSetup, errors.New("--smoke: this build has no smoke qualification wired in (ci Options.Smoke is nil); run `trtmc-qual run` separately"))
	}
	return nil
}

// runCI runs the job (qual/ci), then writes its reports: files
// first, then stdout; its exit status is the largest of the steps'.
func runCI(ctx context.Context, opts *ciOptions) error {
	if err := checkOutsideEvidence("--junit", opts.JUnit, opts.Out); err != nil {
		return err
	}
	if err := checkOutsideEvidence("--summary", opts.Summary, opts.Out); err != nil {
		return err
	}
	job := ci.Run(ctx, ci.Options{
		Repo: opts.Repo, Base: opts.Base, Head: opts.Head, Groups: opts.Groups,
		RunSmoke: opts.RunSmoke, SmokeGroups: opts.SmokeGroups, SpecGroups: opts.SpecGroups,
		Inventory: opts.Inventory, Families: opts.Families, Now: opts.Now, NewGit: opts.NewGit,
		Smoke: opts.Smoke, Log: opts.IO.ErrOut,
		CodeOf: func(err error) int { return int(codeFor(err)) },
	})
	// Published text: what it says of this host's paths and names is
	// mapped (publish.Scrubber; its placeholders need no XML or Markdown
	// escaping). The JSON output is the exact job.
	scrub := publish.NewScrubber(opts.Publish.Roots, opts.Publish.Identity)
	if opts.JUnit != "" {
		var b bytes.Buffer
		if err := job.JUnit(&b); err != nil {
			return err
		}
		if err := writeReport(opts.JUnit, []byte(scrub.Text(b.String()))); err != nil {
			return err
		}
	}
	var raw bytes.Buffer
	if err := job.Markdown(&raw); err != nil {
		return err
	}
	summary := bytes.NewBufferString(scrub.Text(raw.String()))
	if opts.Summary != "" {
		if err := writeReport(opts.Summary, summary.Bytes()); err != nil {
			return err
		}
	}
	if opts.Format == "json" {
		if err := writeJSON(opts.IO.Out, job); err != nil {
			return err
		}
	} else if _, err := opts.IO.Out.Write(summary.Bytes()); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	passed, failed, errored, skipped := job.Counts()
	code := exitCode(job.ExitCode())
	fmt.Fprintf(opts.IO.ErrOut, "ci: %d passed, %d failed, %d error(s), %d skipped; exit %d\n", passed, failed, errored, skipped, code)
	if code != exitOK {
		return &codedError{code: code, err: fmt.Errorf("ci: exit %d", code), quiet: true}
	}
	return nil
}

// writeReport writes a report file atomically, creating its directory.
func writeReport(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return fileio.WriteFileMode(path, data, 0o644)
}
