package inventory

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// TargetError is an edit's target found in none of the inventory files,
// or in more than one: a mistake on the command line, not in a file.
type TargetError struct{ msg string }

func (e *TargetError) Error() string { return e.msg }

// DefiningFile is the one inventory file of files that defines the target
// (`inventory set` edits it). A file that cannot be read is Problems; a
// target in none of the files (with the id or group it most likely meant)
// or in several is a *TargetError.
func DefiningFile(ctx context.Context, files []string, t Target) (string, error) {
	var found, names, ids []string
	for _, file := range files {
		data, err := fileio.ReadFile(ctx, file, fileio.MaxConfigBytes)
		if err != nil {
			return "", Problems{{File: file, Message: fileio.ReadProblem("the inventory", file, err)}}
		}
		inv, _ := Parse(file, data)
		names = append(names, inv.GroupNames()...)
		for _, p := range inv.Profiles() {
			ids = append(ids, p.ID)
			if p.ID == t.Profile && (t.Group == "" || p.Group == t.Group) {
				found = append(found, file)
			}
		}
		if _, ok := inv.Groups[t.Group]; ok && t.Profile == "" {
			found = append(found, file)
		}
	}
	in := strings.Join(files, ", ")
	switch {
	case len(found) > 1:
		return "", &TargetError{fmt.Sprintf("%s is defined in %s: give the one file to edit (--inventory FILE)", t.name(), strings.Join(found, " and "))}
	case len(found) == 1:
		return found[0], nil
	case t.Profile != "":
		return "", &TargetError{WithHint(fmt.Sprintf("no %s in the inventory (%s)", t.name(), in), t.Profile, ids)}
	}
	return "", &TargetError{WithHint(fmt.Sprintf("no %s in the inventory (%s)", t.name(), in), t.Group, names)}
}

// name is how messages name the target.
func (t Target) name() string {
	switch {
	case t.Profile == "":
		return fmt.Sprintf("group %q", t.Group)
	case t.Group != "":
		return fmt.Sprintf("profile %q of group %q", t.Profile, t.Group)
	}
	return fmt.Sprintf("profile %q", t.Profile)
}

// ShippedCheckout names the trtmc-qual checkout whose inventory/ directory
// holds file ("" when it is not such a file): the directory's parent holds
// the harness's go.mod. `inventory set --write` and `inventory reconcile
// --write` refuse such a file without --force.
func ShippedCheckout(file string) string {
	abs, err := filepath.Abs(file)
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	dir := filepath.Dir(abs)
	if filepath.Base(dir) != "inventory" {
		return ""
	}
	checkout := filepath.Dir(dir)
	mod, err := os.ReadFile(filepath.Join(checkout, "go.mod"))
	if err != nil || !bytes.HasPrefix(mod, []byte("module github.com/trtmc-qual/trtmc-qual\n")) {
		return ""
	}
	return checkout
}
