package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports"
)

func newInventoryCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inventory",
		Short: "Validate, list, edit and reconcile the per-checkpoint inventory",
		Example: `  trtmc-qual inventory validate
  trtmc-qual inventory list --group detection --format csv
  trtmc-qual inventory show ref-vlm-small
  trtmc-qual inventory set ref-vlm-small --pin bundle --inventory inv.yaml --write`,
	}
	addInventoryFlags(cmd.PersistentFlags())
	markInputFiles(cmd)
	// The inventory verbs, one line each.
	cmd.AddCommand(
		newInventoryValidateCmd(f, nil),
		newInventoryListCmd(f, nil),
		newInventoryShowCmd(f, nil),
		newInventorySetCmd(f, nil),
		newInventoryReconcileCmd(f, nil),
		newInventoryDriftCmd(f, nil),
	)
	return cmd
}

// --- validate ---------------------------------------------------------------

type inventoryValidateOptions struct {
	IO *IOStreams
	// Files are the inventory files to check: the arguments, else the
	// configured inventory.
	Files    []string
	Families string
	Format   string
}

// inventoryValidateFormats are inventory validate's -o/--format values.
var inventoryValidateFormats = formats("text", "text", "json")

// Validate checks the format.
func (o *inventoryValidateOptions) Validate() error { return inventoryValidateFormats.check(o.Format) }

func newInventoryValidateCmd(f *factory, runF func(*inventoryValidateOptions) error) *cobra.Command {
	opts := &inventoryValidateOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "validate [FILE...]",
		Short: "Check inventory files: schema, cross-references, family names",
		Long: `Check inventory files against the schema and each other: unknown fields,
duplicate ids, unknown families, variants without their normal profile,
exclusions without a reason, malformed bundle digests, unsafe names...
Every problem is printed as FILE:LINE: FIELD: PROBLEM.

` + exitHelp(
			exitOutcome{exitOK, "valid"},
			exitOutcome{exitUsage, "any problem (or a usage error)"}),
		Example: `  trtmc-qual inventory validate
  trtmc-qual inventory validate inventory/reference.yaml --format json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			opts.Files, opts.Families = args, f.Config.Families
			if len(opts.Files) == 0 {
				opts.Files = f.Config.Inventory
			}
			if runF != nil {
				return runF(opts)
			}
			return runInventoryValidate(cmd.Context(), opts)
		},
	}
	addFormatFlag(cmd, &opts.Format, inventoryValidateFormats)
	cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
	}
	return cmd
}

func runInventoryValidate(_ context.Context, opts *inventoryValidateOptions) error {
	inv, _, err := loadInventory(opts.Files, opts.Families)
	var probs inventory.Problems
	if err != nil && !errors.As(err, &probs) {
		return err
	}
	if opts.Format == "json" {
		if probs == nil {
			probs = inventory.Problems{}
		}
		if err := writeJSON(opts.IO.Out, validateOutput{Valid: len(probs) == 0, Problems: probs}); err != nil {
			return err
		}
	} else {
		for _, p := range probs {
			fmt.Fprintln(opts.IO.Out, p.String())
		}
	}
	if len(probs) > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "inventory: %d problem(s)\n", len(probs))
		return &codedError{code: exitUsage, err: fmt.Errorf("inventory has %d problem(s)", len(probs)), quiet: true}
	}
	n, counted := 0, 0
	for _, p := range inv.Profiles() {
		n++
		if p.Counted() {
			counted++
		}
	}
	fmt.Fprintf(opts.IO.ErrOut, "inventory ok: %d group(s), %d profile(s), %d counted as models\n", len(inv.Groups), n, counted)
	return nil
}

// --- list -------------------------------------------------------------------

type inventoryListOptions struct {
	IO     *IOStreams
	Group  string
	Format string
	// Inventory and Families are the configured files.
	Inventory []string
	Families  string
}

// inventoryListFormats are inventory list's and show's -o/--format values.
var inventoryListFormats = formats(reports.FormatAuto, "table", "tsv", "json", "csv")

// Validate checks the format and the group's name.
func (o *inventoryListOptions) Validate() error {
	if err := inventoryListFormats.check(o.Format); err != nil {
		return err
	}
	if o.Group != "" {
		return checkNames("--group", o.Group)
	}
	return nil
}

func newInventoryListCmd(f *factory, runF func(*inventoryListOptions) error) *cobra.Command {
	opts := &inventoryListOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List inventory profiles",
		Long: `List every profile of the inventory (or of one group). A table on a terminal,
tab-separated without a header when piped, or --format json|csv.

` + exitHelp(
			exitOutcome{exitOK, "listed"},
			exitOutcome{exitUsage, "an inventory that does not validate, a group it does not have, or a usage error"}),
		Example: `  trtmc-qual inventory list
  trtmc-qual inventory list --group vlm --format json | jq '.[].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			opts.Inventory, opts.Families = f.Config.Inventory, f.Config.Families
			if runF != nil {
				return runF(opts)
			}
			return runInventoryList(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Group, "group", "g", "", "only this group")
	addFormatFlag(cmd, &opts.Format, inventoryListFormats)
	completeGroupFlag(cmd, f, "group")
	return cmd
}

func runInventoryList(_ context.Context, opts *inventoryListOptions) error {
	inv, _, err := loadInventory(opts.Inventory, opts.Families)
	if err != nil {
		return err
	}
	var profiles []*inventory.Profile
	if opts.Group != "" {
		g, ok := inv.Groups[opts.Group]
		if !ok {
			return flagErrorf("%s", inventory.WithHint(fmt.Sprintf("no group %q in the inventory (groups: %s)", opts.Group,
				strings.Join(inv.GroupNames(), ", ")), opts.Group, inv.GroupNames()))
		}
		profiles = g.Profiles
	} else {
		profiles = inv.Profiles()
	}
	format := reports.Resolve(opts.Format, opts.IO.OutTTY)
	if format == "json" {
		if profiles == nil {
			profiles = []*inventory.Profile{}
		}
		return writeJSON(opts.IO.Out, profiles)
	}
	t := reports.Table{Header: []string{"group", "id", "kind", "family", "checkpoint", "precision", "parallelism", "status", "counted", "bundle_sha256"}}
	for _, p := range profiles {
		status := p.Status
		if p.Exclusion != nil {
			status = "excluded: " + p.Exclusion.Reason
		}
		t.Rows = append(t.Rows, []string{p.Group, p.ID, p.Kind, p.Family, p.Checkpoint, p.Precision,
			p.Parallelism.String(), status, strconv.FormatBool(p.Counted()), short(p.Bundle.SHA256)})
	}
	return t.Write(opts.IO.Out, format)
}

// --- show -------------------------------------------------------------------

type inventoryShowOptions struct {
	IO     *IOStreams
	ID     string
	Format string
	// Inventory and Families are the configured files.
	Inventory []string
	Families  string
}

// Validate checks the profile id's name and the format.
func (o *inventoryShowOptions) Validate() error {
	if err := checkNames("ID", o.ID); err != nil {
		return err
	}
	return inventoryListFormats.check(o.Format)
}

func newInventoryShowCmd(f *factory, runF func(*inventoryShowOptions) error) *cobra.Command {
	opts := &inventoryShowOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one inventory profile",
		Long: `Show one profile of the inventory: every field, and where it is defined.
A table on a terminal, tab-separated without a header when piped, or
--format json|csv.

` + exitHelp(
			exitOutcome{exitOK, "shown"},
			exitOutcome{exitUsage, "an inventory that does not validate, an id it does not have, or a usage error"}),
		Example: "  trtmc-qual inventory show ref-detect-small --format json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if err := opts.Validate(); err != nil {
				return err
			}
			opts.Inventory, opts.Families = f.Config.Inventory, f.Config.Families
			if runF != nil {
				return runF(opts)
			}
			return runInventoryShow(cmd.Context(), opts)
		},
	}
	addFormatFlag(cmd, &opts.Format, inventoryListFormats)
	cmd.ValidArgsFunction = completeProfileArg(f)
	return cmd
}

func runInventoryShow(_ context.Context, opts *inventoryShowOptions) error {
	inv, _, err := loadInventory(opts.Inventory, opts.Families)
	if err != nil {
		return err
	}
	p, ok := inv.Find(opts.ID)
	if !ok {
		return flagErrorf("%s", inventory.WithHint(fmt.Sprintf("no profile %q in the inventory", opts.ID), opts.ID, inv.IDs()))
	}
	format := reports.Resolve(opts.Format, opts.IO.OutTTY)
	if format == "json" {
		return writeJSON(opts.IO.Out, p)
	}
	excl := ""
	if p.Exclusion != nil {
		excl = p.Exclusion.Reason
	}
	t := reports.Table{Header: []string{"field", "value"}, Rows: [][]string{
		{"id", p.ID}, {"group", p.Group}, {"checkpoint", p.Checkpoint}, {"revision", p.Revision},
		{"family", p.Family}, {"task", p.Task}, {"kind", p.Kind}, {"variant_of", p.VariantOf},
		{"precision", p.Precision}, {"parallelism", p.Parallelism.String()},
		{"bundle.path", p.Bundle.Path}, {"bundle.sha256", p.Bundle.SHA256},
		{"controls", strings.Join(p.Controls, ",")}, {"gaps", strings.Join(p.Gaps, "; ")},
		{"hardware", strings.Join(p.Hardware, ",")}, {"status", p.Status}, {"exclusion", excl},
		{"defined_at", p.Where("id")},
	}}
	return t.Write(opts.IO.Out, format)
}

// --- helpers shared by verbs ---------------------------------------------------

// validateOutput is `inventory validate --format json`.
type validateOutput struct {
	Valid    bool               `json:"valid"`
	Problems inventory.Problems `json:"problems"`
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
