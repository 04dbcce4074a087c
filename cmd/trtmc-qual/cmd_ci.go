package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/ci"
	"github.com/trtmc-qual/trtmc-qual/inventory/drift"
	"github.com/trtmc-qual/trtmc-qual/inventory/reconcile"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
)

// SmokeFunc runs a smoke qualification of one group and says whether it
// passed, with a one-line summary. The root wires it to the run pipeline.
type SmokeFunc func(ctx context.Context, group string) (passed bool, summary string, err error)

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

Exit status: the largest of the steps': 0 all passed, 1 a check failed,
2 configuration, inventory or usage error, 3 setup error (git missing, smoke
qualification unavailable), 4 harness error, 130 interrupted.`,
		Example: `  trtmc-qual ci --repo ../TensorRT-Model-Connect --base origin/main --head HEAD \
    --junit out/ci/junit.xml --summary out/ci/summary.md
  trtmc-qual ci --repo ../TensorRT-Model-Connect --base main --group vlm --smoke`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Repo == "" {
				return flagErrorf("--repo is required (a TRTMC checkout or bare repository)")
			}
			if err := checkFormatFlag(cmd); err != nil {
				return err
			}
			if err := checkFileKind("junit", opts.JUnit, "xml"); err != nil {
				return err
			}
			if err := checkFileKind("summary", opts.Summary, reports.FormatMarkdown); err != nil {
				return err
			}
			if opts.RunSmoke && opts.Smoke == nil {
				return withCode(exitSetup, errors.New("--smoke: this build has no smoke qualification wired in (ci Options.Smoke is nil); run `trtmc-qual run` separately"))
			}
			opts.SpecGroups = f.Config.SpecGroups
			opts.Inventory = f.Config.Inventory
			opts.Families = f.Config.Families
			opts.Now = f.Now
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
	addFormatFlag(cmd, &opts.Format, reports.FormatMarkdown, reports.FormatMarkdown, reports.FormatJSON)
	addSpecGroupsFlag(cmd)
	addInventoryFlags(fl)
	addAIPerfFlags(fl)
	markInputFiles(cmd)
	completeSpecGroupsFlag(cmd, f, "group")
	completeSpecGroupsFlag(cmd, f, "smoke-group")
	_ = cmd.MarkFlagDirname("repo")
	return cmd
}

func runCI(ctx context.Context, opts *ciOptions) error {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	job := &ci.Job{Name: "trtmc-qual ci", Repo: opts.Repo, Base: opts.Base, Head: opts.Head, Started: now()}
	add := func(s ci.Step, start time.Time) {
		s.Duration = now().Sub(start)
		job.Steps = append(job.Steps, s)
		msg := s.Message
		if msg == "" {
			msg = "-"
		}
		fmt.Fprintf(opts.IO.ErrOut, "ci: %s: %s: %s\n", s.Name, s.Status, msg)
	}

	// validate-inventory and validate-families.
	start := now()
	var fams *families.Config
	var famErr error
	if opts.Families == "" {
		famErr = errors.New("no family configuration: pass --families FILE or set families in the config file")
	} else {
		fams, famErr = families.Load(opts.Families)
	}
	var known func(string) bool
	if fams != nil {
		known = fams.Has
	}
	var inv *inventory.Inventory
	invOK := false
	{
		s := ci.Step{Name: "validate-inventory"}
		var probs inventory.Problems
		switch {
		case len(opts.Inventory) == 0:
			s.Status, s.Code, s.Message = ci.StepError, int(exitUsage), "no inventory: pass --inventory FILE or set inventory in the config file"
		default:
			var err error
			inv, err = inventory.Load(opts.Inventory, known)
			switch {
			case errors.As(err, &probs):
				s.Status, s.Code = ci.StepError, int(exitUsage)
				s.Message = fmt.Sprintf("%d problem(s), first: %s", len(probs), probs[0].String())
				s.Output = probs.Error()
				s.Markdown = "```\n" + probs.Error() + "\n```\n"
			case err != nil:
				inv = nil
				s.Status, s.Code, s.Message = ci.StepError, int(exitUsage), err.Error()
			default:
				invOK = true
				n := len(inv.Profiles())
				s.Status, s.Message = ci.StepPassed, fmt.Sprintf("%d group(s), %d profile(s) in %s", len(inv.Groups), n, strings.Join(opts.Inventory, ", "))
			}
		}
		if famErr != nil && s.Status == ci.StepPassed {
			// Known-family checks could not run.
			s.Message += " (family names unchecked: the family configuration failed)"
		}
		add(s, start)
	}
	start = now()
	{
		s := ci.Step{Name: "validate-families"}
		if famErr != nil {
			s.Status, s.Code, s.Message, s.Output = ci.StepError, int(exitUsage), firstLine(famErr.Error()), famErr.Error()
		} else {
			s.Status, s.Message = ci.StepPassed, fmt.Sprintf("%d family(ies) in %s", len(fams.Names()), opts.Families)
		}
		add(s, start)
	}

	// The specs at the base.
	cfg, cfgErr := specs.LoadConfig(opts.SpecGroups)
	var src specs.Source
	var baseSnap *specs.Snapshot
	var baseErr error
	if cfgErr == nil {
		src = specs.Source{Git: opts.NewGit(opts.Repo), Config: cfg, Repo: opts.Repo}
		baseSnap, baseErr = src.Read(ctx, opts.Base)
		if baseSnap != nil {
			job.BaseCommit = baseSnap.Commit
		}
		if head, err := src.Git.Commit(ctx, opts.Head); err == nil {
			job.HeadCommit = head
		}
	}
	groups, groupErr := ciGroups(opts, cfg, inv)

	// stepError turns an error into an error step with its exit status.
	stepError := func(name string, err error) ci.Step {
		s := ci.Step{Name: name, Status: ci.StepError, Message: firstLine(err.Error()), Output: err.Error()}
		s.Code = int(codeFor(err))
		var ce *specs.ConfigError
		if errors.As(err, &ce) {
			s.Code = int(exitUsage)
		}
		return s
	}
	if cfgErr != nil {
		add(stepError("spec-groups", cfgErr), now())
	}
	if groupErr != nil {
		add(stepError("groups", groupErr), now())
	}
	for _, g := range groups {
		start := now()
		name := "reconcile-" + g
		switch {
		case ctx.Err() != nil:
		case cfgErr != nil:
			add(stepError(name, cfgErr), start)
		case baseErr != nil:
			add(stepError(name, specsError(baseErr)), start)
		case !invOK:
			add(ci.Step{Name: name, Status: ci.StepSkipped, Message: "the inventory is invalid (see validate-inventory)"}, start)
		default:
			r := reconcile.Reconcile(cfg, baseSnap, inv, g)
			s := ci.Step{Name: name, Status: ci.StepPassed, Message: r.Line()}
			if r.Summary.NeedAction > 0 {
				s.Status, s.Code = ci.StepFailed, int(exitFailed)
			}
			var b strings.Builder
			for _, row := range r.NeedsAction() {
				fmt.Fprintf(&b, "%s\t%s\t%s\n", row.Profile, row.State, row.Detail)
			}
			s.Output = b.String()
			var md bytes.Buffer
			if err := r.Markdown(&md); err == nil {
				s.Markdown = md.String()
			}
			add(s, start)
		}
	}
	for _, g := range groups {
		start := now()
		name := "drift-" + g
		if ctx.Err() != nil {
			break
		}
		if cfgErr != nil {
			add(stepError(name, cfgErr), start)
			continue
		}
		r, err := drift.Drift(ctx, src, opts.Base, opts.Head, []string{g})
		if err != nil {
			add(stepError(name, specsError(err)), start)
			continue
		}
		s := ci.Step{Name: name, Status: ci.StepPassed, Message: r.Line()}
		if len(r.Changes) > 0 {
			s.Status, s.Code = ci.StepFailed, int(exitFailed)
		}
		var b strings.Builder
		for _, c := range r.Changes {
			fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", c.Status, c.Category, c.Path, c.Summary)
		}
		s.Output = b.String()
		var md bytes.Buffer
		if err := r.Markdown(&md); err == nil {
			s.Markdown = md.String()
		}
		add(s, start)
	}
	smokeGroups := opts.SmokeGroups
	if len(smokeGroups) == 0 {
		smokeGroups = groups
	}
	for _, g := range smokeGroups {
		start := now()
		name := "smoke-" + g
		if ctx.Err() != nil {
			break
		}
		if !opts.RunSmoke {
			add(ci.Step{Name: name, Status: ci.StepSkipped, Message: "not asked (--smoke)"}, start)
			continue
		}
		passed, summary, err := opts.Smoke(ctx, g)
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil:
			add(stepError(name, err), start)
		case !passed:
			add(ci.Step{Name: name, Status: ci.StepFailed, Code: int(exitFailed), Message: summary, Output: summary}, start)
		default:
			add(ci.Step{Name: name, Status: ci.StepPassed, Message: summary}, start)
		}
	}

	// Reports: files first, then stdout.
	if opts.JUnit != "" {
		var b bytes.Buffer
		if err := job.JUnit(&b); err != nil {
			return err
		}
		if err := writeReport(opts.JUnit, b.Bytes()); err != nil {
			return err
		}
	}
	var summary bytes.Buffer
	if err := job.Markdown(&summary); err != nil {
		return err
	}
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
	return evidence.WriteFileMode(path, data, 0o644)
}

// ciGroups returns the groups to check: --group, or the groups both in the
// inventory and in the spec-groups file (every spec group when the
// inventory could not be read).
func ciGroups(opts *ciOptions, cfg *specs.Config, inv *inventory.Inventory) ([]string, error) {
	if cfg == nil {
		return opts.Groups, nil
	}
	if len(opts.Groups) > 0 {
		for _, g := range opts.Groups {
			if err := inventory.CheckName(g); err != nil {
				return nil, flagErrorf("--group: %v", err)
			}
			if err := cfg.CheckGroup(g); err != nil {
				return nil, withCode(exitUsage, err)
			}
		}
		return opts.Groups, nil
	}
	if inv == nil {
		return cfg.GroupNames(), nil
	}
	var out []string
	for _, g := range inv.GroupNames() {
		if _, ok := cfg.Groups[g]; ok {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
