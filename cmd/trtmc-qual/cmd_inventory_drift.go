package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/inventory/drift"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/reports"
)

type inventoryDriftOptions struct {
	IO         *IOStreams
	Repo       string
	Base       string
	Head       string
	Groups     []string
	Format     string
	SpecGroups string
	NewGit     func(repo string) gitread.Repo
}

// specFormats are inventory drift's and reconcile's -o/--format values.
var specFormats = formats(reports.FormatAuto, "table", "tsv", "json", "md")

// Validate checks the flags: a repository, the format and the group names.
func (o *inventoryDriftOptions) Validate() error {
	if o.Repo == "" {
		return flagErrorf("--repo is required (a TRTMC checkout or bare repository)")
	}
	if err := specFormats.check(o.Format); err != nil {
		return err
	}
	return checkNames("--group", o.Groups...)
}

func newInventoryDriftCmd(f *factory, runF func(*inventoryDriftOptions) error) *cobra.Command {
	opts := &inventoryDriftOptions{IO: f.IO, NewGit: gitCLI}
	cmd := &cobra.Command{
		Use:   "drift --repo PATH --base main [--head HEAD]",
		Short: "List model specs, thresholds and references that differ between two refs",
		Long: `List every file of the groups' TRTMC family folders that differs between two
refs: MODEL.toml, manifests, thresholds, references and golden data, family
tests and comparators. A qualification pull request must show that none of
them differs from main. Both refs are read through git (committed content
only; uncommitted edits in a checkout are not seen).

A family belongs to a group when one of its manifests, or its MODEL.toml
[e2e_defaults.*] tables, names a task strategy of the group at either ref; a
family folder that names none is checked for every group. JSON and TOML files
are summarised key by key with both values; other files by line counts.

` + exitHelp(
			exitOutcome{exitOK, "nothing differs"},
			exitOutcome{exitFailed, "something does"},
			exitOutcome{exitUsage, "a usage or spec-groups error (unknown group or ref, not a git repository)"},
			exitOutcome{exitSetup, "git is not available"}),
		Example: `  trtmc-qual inventory drift --repo ../TensorRT-Model-Connect --base main --group vlm
  trtmc-qual inventory drift --repo ../TensorRT-Model-Connect --base origin/main --head HEAD --format md`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			opts.SpecGroups = f.Config.SpecGroups
			if runF != nil {
				return runF(opts)
			}
			return runInventoryDrift(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Repo, "repo", "", "TRTMC repository: a checkout or a bare git directory (required)")
	fl.StringVar(&opts.Base, "base", "main", "the base ref")
	fl.StringVar(&opts.Head, "head", "HEAD", "the head ref")
	fl.StringSliceVarP(&opts.Groups, "group", "g", nil, "only these groups (default: every group of the spec-groups file)")
	addFormatFlag(cmd, &opts.Format, specFormats)
	addSpecGroupsFlag(cmd)
	completeSpecGroupsFlag(cmd, f, "group")
	_ = cmd.MarkFlagDirname("repo")
	return cmd
}

func runInventoryDrift(ctx context.Context, opts *inventoryDriftOptions) error {
	cfg, err := specs.LoadConfig(opts.SpecGroups)
	if err != nil {
		return err
	}
	for _, g := range opts.Groups {
		if err := cfg.CheckGroup(g); err != nil {
			return &flagError{err}
		}
	}
	src := specs.Source{Git: opts.NewGit(opts.Repo), Config: cfg, Repo: opts.Repo}
	r, err := drift.Drift(ctx, src, opts.Base, opts.Head, opts.Groups)
	if err != nil {
		return err
	}
	format := reports.Resolve(opts.Format, opts.IO.OutTTY)
	switch format {
	case "json":
		err = writeJSON(opts.IO.Out, r)
	case "md":
		err = r.Markdown(opts.IO.Out)
	default:
		err = reports.Table{Header: r.TableHeader(), Rows: r.TableRows()}.Write(opts.IO.Out, format)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.ErrOut, r.Line())
	if len(r.Changes) > 0 {
		return &codedError{code: exitFailed, err: fmt.Errorf("%d spec file(s) differ", len(r.Changes)), quiet: true}
	}
	return nil
}
