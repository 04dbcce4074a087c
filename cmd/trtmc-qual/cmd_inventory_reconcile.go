package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/reconcile"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

type inventoryReconcileOptions struct {
	IO     *IOStreams
	Group  string
	Repo   string
	Ref    string
	Format string
	Write  bool
	// Force lets --write edit the inventory shipped with trtmc-qual
	// (refused without it, as inventory set refuses it).
	Force bool
	// SpecGroups is the spec-groups file ("" = the built-in mapping).
	SpecGroups string
	// NewGit opens the TRTMC repository; tests may replace it.
	NewGit func(repo string) gitread.Repo
	// Inventory and Families are the configured files (--write appends
	// to the inventory file that holds the group).
	Inventory []string
	Families  string
}

// Validate checks the flags: a repository, a group and its name, the
// format.
func (o *inventoryReconcileOptions) Validate() error {
	if o.Repo == "" {
		return flagErrorf("--repo is required (a TRTMC checkout or bare repository)")
	}
	if o.Group == "" {
		return flagErrorf("--group is required")
	}
	if err := checkNames("--group", o.Group); err != nil {
		return err
	}
	return specFormats.check(o.Format)
}

func newInventoryReconcileCmd(f *factory, runF func(*inventoryReconcileOptions) error) *cobra.Command {
	opts := &inventoryReconcileOptions{IO: f.IO, NewGit: gitCLI}
	cmd := &cobra.Command{
		Use:   "reconcile --repo PATH --group G",
		Short: "Reconcile an inventory group with TRTMC's model specs at a git ref",
		Long: `Reconcile one group of the inventory with the model specs of a TRTMC checkout
at a git ref (default main), read through git, never from the work tree. The
ref is resolved to a commit sha, which every output records.

Every manifest whose task_strategy belongs to the group (see --spec-groups) is
classified normal, variant or partial, with the rule that decided it, and
compared with the inventory profile of the same id on checkpoint, revision,
precision, bundle name and kind. One row per profile:

  ok        normal, in both, agreeing
  missing   normal in the specs, not in the inventory         (needs action)
  stale     in the inventory, not a spec of the group          (needs action)
  drift     in both, fields differ (named, with both values)   (needs action)
  variant   a precision/quantisation/TP/CP/build variant: listed, not counted
  partial   an L0/random/regression/smoke profile: listed, not counted
  excluded  excluded by the inventory, with its reason
  unlisted  a manifest its MODEL.toml does not list            (needs action)
  invalid   a listed manifest that is missing or malformed     (needs action)

The rows go to stdout (a table on a terminal, tab-separated when piped, or
--format json|md); the summary line goes to stderr. --write appends planned
entries for the missing profiles to the inventory file that holds the group,
leaving existing content byte for byte; when that cannot be done safely (the
family is not configured, the list is in flow style...) it writes a separate
proposal file and says why. The rows and the exit status describe the state
before writing. --write refuses the inventory shipped with trtmc-qual (its
inventory/ directory) unless --force: reconcile a copy (docs/trtmc.md, step 4).

` + exitHelp(
			exitOutcome{exitOK, "nothing needs action"},
			exitOutcome{exitFailed, "something does"},
			exitOutcome{exitUsage, "a usage, inventory or spec-groups error (unknown group or ref, not a git repository, --write on the shipped inventory without --force)"},
			exitOutcome{exitSetup, "git is not available"}),
		Example: `  trtmc-qual inventory reconcile --repo ../TensorRT-Model-Connect --group vlm
  trtmc-qual inventory reconcile --repo ../TensorRT-Model-Connect --ref a832817 --group vlm --format md
  trtmc-qual inventory reconcile --repo ../TensorRT-Model-Connect --group detection --write`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			opts.SpecGroups = f.Config.SpecGroups
			opts.Inventory, opts.Families = f.Config.Inventory, f.Config.Families
			if runF != nil {
				return runF(opts)
			}
			return runInventoryReconcile(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Group, "group", "g", "", "the group to reconcile (required)")
	fl.StringVar(&opts.Repo, "repo", "", "TRTMC repository: a checkout or a bare git directory (required)")
	fl.StringVar(&opts.Ref, "ref", "main", "git ref of the specs (branch, tag or sha)")
	addFormatFlag(cmd, &opts.Format, specFormats)
	fl.BoolVar(&opts.Write, "write", false, "append planned entries for missing profiles to the inventory")
	fl.BoolVar(&opts.Force, "force", false, "with --write: also edit the inventory shipped with trtmc-qual")
	addSpecGroupsFlag(cmd)
	completeGroupFlag(cmd, f, "group")
	_ = cmd.MarkFlagDirname("repo")
	return cmd
}

func runInventoryReconcile(ctx context.Context, opts *inventoryReconcileOptions) error {
	cfg, err := specs.LoadConfig(opts.SpecGroups)
	if err != nil {
		return err
	}
	if err := cfg.CheckGroup(opts.Group); err != nil {
		return &flagError{err}
	}
	inv, fams, err := loadInventory(opts.Inventory, opts.Families)
	if err != nil {
		return err
	}
	if err := refuseShippedWrite(opts, inv); err != nil {
		return err
	}
	src := specs.Source{Git: opts.NewGit(opts.Repo), Config: cfg, Repo: opts.Repo}
	snap, err := src.Read(ctx, opts.Ref)
	if err != nil {
		return err
	}
	r := reconcile.Reconcile(cfg, snap, inv, opts.Group)
	if err := writeReconcile(opts.IO, r, opts.Format); err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.ErrOut, text.Printable(r.Line()))
	for _, g := range r.Gaps {
		fmt.Fprintln(opts.IO.ErrOut, text.Printable(fmt.Sprintf("gap: %s has no normal profile (only %s)", g.Checkpoint, strings.Join(g.Profiles, ", "))))
	}
	if opts.Write {
		if r.Summary.Missing == 0 {
			fmt.Fprintln(opts.IO.ErrOut, "write: no missing profile to propose")
		} else {
			p, err := reconcile.WriteProposals(r, inv, opts.Inventory, fams.Has, entryDefaults(fams))
			if err != nil {
				return err
			}
			reportProposal(opts.IO, p)
		}
	}
	if r.Summary.NeedAction > 0 {
		return &codedError{code: exitFailed, err: fmt.Errorf("%d profile(s) need action", r.Summary.NeedAction), quiet: true}
	}
	return nil
}

// refuseShippedWrite refuses --write, before anything is read or
// written, when the file it would edit (the one that holds the group, else
// the first inventory file) is the inventory shipped with trtmc-qual and
// --force is not given: the rule inventory set follows (inventory.ShippedCheckout).
func refuseShippedWrite(opts *inventoryReconcileOptions, inv *inventory.Inventory) error {
	if !opts.Write || opts.Force {
		return nil
	}
	file := ""
	if g, ok := inv.Groups[opts.Group]; ok {
		file = g.File
	} else if len(opts.Inventory) > 0 {
		file = opts.Inventory[0]
	}
	if shipped := inventory.ShippedCheckout(file); file != "" && shipped != "" {
		return withCode(exitUsage, fmt.Errorf("inventory reconcile --write: %s is the inventory shipped with trtmc-qual (%s): "+
			"reconcile a copy (docs/trtmc.md, step 4), or pass --force to edit it", file, shipped))
	}
	return nil
}

// entryDefaults hands reconcile --write what each family's configuration
// says a new profile records (families.yaml `inventory:`).
func entryDefaults(fams *families.Config) reconcile.Defaults {
	return func(family string) *reconcile.EntryDefaults {
		f, ok := fams.Families[family]
		if !ok {
			return nil
		}
		d := f.Inventory
		return &reconcile.EntryDefaults{Controls: d.Controls, Gaps: d.Gaps, Hardware: d.Hardware, BundleDir: d.BundleDir, Tokenizer: d.Tokenizer}
	}
}

func writeReconcile(io *IOStreams, r *reconcile.Report, format string) error {
	switch reports.Resolve(format, io.OutTTY) {
	case "json":
		return writeJSON(io.Out, r)
	case "md":
		return r.Markdown(io.Out)
	default:
		return reports.Table{Header: r.TableHeader(), Rows: r.TableRows()}.Write(io.Out, reports.Resolve(format, io.OutTTY))
	}
}

// reportProposal says what --write did, every line escaped for the
// terminal (a manifest's name can hold anything).
func reportProposal(io *IOStreams, p *reconcile.Proposal) {
	say := func(format string, args ...any) {
		fmt.Fprintln(io.ErrOut, text.Printable(fmt.Sprintf(format, args...)))
	}
	for _, x := range p.Refused {
		say("write: refused %s from %s: %s", x.Profile, x.Manifest, x.Problem)
	}
	switch {
	case len(p.Profiles) == 0 && len(p.Refused) > 0:
		say("write: the inventory was NOT changed: no proposed profile passes validation")
	case p.Appended:
		say("write: appended %d planned profile(s) to %s: %s", len(p.Profiles), p.File, strings.Join(p.Profiles, ", "))
	default:
		say("write: the inventory was NOT changed; %d proposed profile(s) written to %s: %s", len(p.Profiles), p.File, strings.Join(p.Profiles, ", "))
		for _, why := range p.Reasons {
			say("write:   because %s", why)
		}
	}
}

// --- shared by reconcile, drift and ci ------------------------------------

func gitCLI(repo string) gitread.Repo { return gitread.CLI{Repo: repo} }

// addSpecGroupsFlag adds --spec-groups, bound to the spec_groups config key.
func addSpecGroupsFlag(cmd *cobra.Command) {
	cmd.Flags().String("spec-groups", "", "spec-groups file: task strategy → group and classification rules (default: built in)")
	_ = cmd.MarkFlagFilename("spec-groups", "yaml", "yml")
}
