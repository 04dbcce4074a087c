package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

type inventorySetOptions struct {
	IO *IOStreams
	// Profile is the profile to change; empty with Group, the group's own
	// fields (description, workload).
	Profile     string
	Group       string
	Assignments []inventory.Assignment
	Pins        []string
	// Write applies the edit; without it the diff is printed and nothing
	// is written. Force lets --write edit the inventory shipped with the
	// harness.
	Write, Force bool
	// Inventory and Families are the configured files.
	Inventory []string
	Families  string
	// args are the positional arguments, read by Validate.
	args []string
}

// inventoryPins are --pin's values.
var inventoryPins = []string{inventory.PinBundle, inventory.PinTokenizer, inventory.PinCorpus}

// setLockWait is how long --write waits for another edit of the same file.
const setLockWait = 30 * time.Second

// Validate reads the arguments ([PROFILE] FIELD=VALUE...) and checks them
// with the flags: a profile or --group, something to set, known pins.
func (o *inventorySetOptions) Validate() error {
	o.Profile, o.Assignments = "", nil
	for i, a := range o.args {
		if i == 0 && !strings.Contains(a, "=") {
			o.Profile = a
			continue
		}
		as, err := inventory.ParseAssignment(a)
		if err != nil {
			return flagErrorf("%v", err)
		}
		o.Assignments = append(o.Assignments, as)
	}
	switch {
	case o.Profile == "" && o.Group == "":
		return flagErrorf("name the profile to change (inventory set PROFILE FIELD=VALUE...) or the group (--group G)")
	case len(o.Assignments) == 0 && len(o.Pins) == 0:
		return flagErrorf("nothing to set: give FIELD=VALUE or --pin")
	}
	for _, p := range o.Pins {
		if !slices.Contains(inventoryPins, p) {
			return flagErrorf("--pin %q: valid values are %s", p, strings.Join(inventoryPins, ", "))
		}
		if (p == inventory.PinCorpus) != (o.Profile == "") {
			return flagErrorf("--pin %s: the corpus is pinned for a group (--group G, no profile); a bundle or tokenizer for a profile", p)
		}
	}
	if o.Profile != "" {
		if err := checkNames("PROFILE", o.Profile); err != nil {
			return err
		}
	}
	if o.Group != "" {
		return checkNames("--group", o.Group)
	}
	return nil
}

func newInventorySetCmd(f *factory, runF func(*inventorySetOptions) error) *cobra.Command {
	opts := &inventorySetOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "set [PROFILE] FIELD=VALUE... [--group G] [--pin bundle|tokenizer|corpus] [--write]",
		Short: "Set fields and pins of one profile or group in the inventory file",
		Long: `Set fields of one profile (or, with --group and no profile, of the group:
description, workload) in the inventory file that defines it, editing the YAML
in place: every other byte (comments, blank lines, key order, quoting, flow or
block style) stays as it is. FIELD is the key as the file spells it, dotted for
a nested one (revision, source_commit, bundle.sha256, tokenizer.path,
exclusion.reason, workload.dataset.sha256); a list (hardware, controls, gaps)
takes its items separated by commas. A key the entry lacks is added after the
key before it in the schema's order; a missing parent is added as a flow
mapping (exclusion: {reason: ...}).

--pin computes a pin from the entry's own path by the rule the run checks it
by: bundle, the sha256 of the bundle file (bundle.path); tokenizer, of the
directory's tokenizer.json (tokenizer.path); corpus (with --group), of the
corpus directory's corpus.json (workload.dataset.corpus). Relative paths are
taken from the inventory file's directory, as the run takes them.

The unified diff is printed on stdout; nothing is written without --write,
which applies it atomically (temp file, fsync, rename, the file's permissions
kept) under a lock on the file, refusing if another program changed it
meanwhile. The result is proven first: it must validate with no problem the
file did not have, and read back with exactly the values set and nothing else
changed. --write refuses the inventory shipped with trtmc-qual (its
inventory/ directory) unless --force: edit a copy (docs/trtmc.md).

` + exitHelp(
			exitOutcome{exitOK, "set, or the diff printed (or nothing to change)"},
			exitOutcome{exitUsage, "a profile, group or field the file does not have, a value of the wrong type, " +
				"a result that does not validate, a layout it cannot edit in place (each as FILE:LINE: FIELD: PROBLEM), " +
				"the shipped inventory without --force, or a usage error"},
			exitOutcome{exitSetup, "the file was being edited by another program (run it again)"}),
		Example: `  # what would change, then change it
  trtmc-qual inventory set qwen3-vl-2b revision=0123456789abcdef0123456789abcdef01234567 --inventory inv.yaml
  trtmc-qual inventory set qwen3-vl-2b revision=0123456789abcdef0123456789abcdef01234567 --inventory inv.yaml --write

  # pin the bundle and the tokenizer the entry names, and record the source commit
  trtmc-qual inventory set qwen3-vl-2b --pin bundle --pin tokenizer source_commit=$(git -C "$TRTMC_REPO" rev-parse HEAD) --write

  # take a variant out, with the reason
  trtmc-qual inventory set internvl3-2b-tp2 exclusion.reason="one trtmc-server process, no mpirun launch" exclusion.owner=release-eng --write

  # pin the group's corpus
  trtmc-qual inventory set --group vlm --pin corpus --write`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.args = args
			if err := opts.Validate(); err != nil {
				return err
			}
			opts.Inventory, opts.Families = f.Config.Inventory, f.Config.Families
			if runF != nil {
				return runF(opts)
			}
			return runInventorySet(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Group, "group", "g", "", "the group: its own fields when no profile is named; else where to look for the profile")
	fl.StringSliceVar(&opts.Pins, "pin", nil, "compute and set a pin: bundle, tokenizer (of the profile) or corpus (of --group)")
	fl.BoolVar(&opts.Write, "write", false, "apply the edit (without it: print the diff, write nothing)")
	fl.BoolVar(&opts.Force, "force", false, "with --write: also edit the inventory shipped with trtmc-qual")
	completeGroupFlag(cmd, f, "group")
	_ = cmd.RegisterFlagCompletionFunc("pin", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return inventoryPins, cobra.ShellCompDirectiveNoFileComp
	})
	cmd.ValidArgsFunction = completeProfileArg(f)
	return cmd
}

// runInventorySet finds the file that defines the target, edits it
// (inventory.Set, which proves the result), prints the diff and, with
// --write, replaces the file atomically under its lock.
func runInventorySet(ctx context.Context, opts *inventorySetOptions) error {
	var known func(string) bool
	if opts.Families != "" {
		fams, err := loadFamilies(opts.Families)
		if err != nil {
			return err
		}
		known = fams.Has
	}
	target := inventory.Target{Profile: opts.Profile, Group: opts.Group}
	file, err := setFile(ctx, opts.Inventory, target)
	if err != nil {
		return err
	}
	shipped := inventory.ShippedCheckout(file)
	if opts.Write && shipped != "" && !opts.Force {
		return withCode(exitUsage, fmt.Errorf("inventory set: %s is the inventory shipped with trtmc-qual (%s): "+
			"edit a copy (docs/trtmc.md, step 4), or pass --force to edit it", file, shipped))
	}
	set := func(old []byte) (*inventory.SetResult, error) {
		return inventory.Set(ctx, inventory.SetOptions{Path: file, Data: old, Target: target,
			Assignments: opts.Assignments, Pins: opts.Pins, KnownFamily: known})
	}
	var old, updated []byte
	if !opts.Write {
		if old, err = fileio.ReadFile(ctx, file, fileio.MaxConfigBytes); err != nil {
			return withCode(exitUsage, fmt.Errorf("inventory set: %w", err))
		}
		res, err := set(old)
		if err != nil {
			return err
		}
		updated = res.Data
	} else {
		_, err := fileio.UpdateFile(ctx, file, fileio.MaxConfigBytes, setLockWait, func(b []byte) ([]byte, error) {
			res, err := set(b)
			if err != nil {
				return nil, err
			}
			old, updated = b, res.Data
			return res.Data, nil
		})
		var busy *fileio.BusyError
		var moved *fileio.ChangedError
		switch {
		case errors.As(err, &busy), errors.As(err, &moved):
			return withCode(exitSetup, err) // run again, the same command succeeds
		case err != nil:
			return err
		}
	}
	return setReport(opts, file, shipped, old, updated)
}

// setReport prints the diff on stdout and what was done on stderr.
func setReport(opts *inventorySetOptions, file, shipped string, old, updated []byte) error {
	if err := reports.WriteUnifiedDiff(opts.IO.Out, file, file+" (updated)", old, updated); err != nil {
		return err
	}
	switch {
	case bytes.Equal(old, updated):
		fmt.Fprintf(opts.IO.ErrOut, "inventory set: %s: nothing to change\n", file)
	case opts.Write:
		fmt.Fprintf(opts.IO.ErrOut, "inventory set: wrote %s\n", file)
	default:
		note := ""
		if shipped != "" {
			note = " (it is the inventory shipped with trtmc-qual: --write refuses it without --force; edit a copy)"
		}
		fmt.Fprintf(opts.IO.ErrOut, "inventory set: %s would change; nothing written: pass --write to apply it%s\n", file, note)
	}
	return nil
}

// setFile is the one inventory file that defines the target
// (inventory.DefiningFile); a target in none or several is a usage error.
func setFile(ctx context.Context, files []string, t inventory.Target) (string, error) {
	if len(files) == 0 {
		return "", &configError{errors.New("no inventory: pass --inventory FILE or set inventory in the config file")}
	}
	file, err := inventory.DefiningFile(ctx, files, t)
	var te *inventory.TargetError
	if errors.As(err, &te) {
		return "", flagErrorf("%v", err)
	}
	return file, err
}
