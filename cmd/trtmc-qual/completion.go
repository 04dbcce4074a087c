package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/qual"
)

// Shell completion of flag values: group names, profile ids, formats
// (flags.go), inventory and family files, GPU selections. Cobra does not
// run PersistentPreRunE when completing, so each function resolves the
// configuration itself (the flags typed so far, the environment, the
// config file) and completes nothing when that fails: completion never
// prints an error into the user's shell.

// completionInventory loads the inventory the command line so far points
// at; nil when there is none or it does not parse at all.
func completionInventory(cmd *cobra.Command, f *factory) *inventory.Inventory {
	cfg, err := loadConfig(cmd, f.Getenv)
	if err != nil || len(cfg.Inventory) == 0 {
		return nil
	}
	inv, _ := inventory.Load(cfg.Inventory, nil) // problems still leave what parsed
	return inv
}

// listCompletion completes the last element of a comma-separated value,
// keeping what was typed before it and leaving out values already chosen.
func listCompletion(toComplete string, candidates []string, list bool) []string {
	prefix, last := "", toComplete
	var chosen []string
	if list {
		if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
			prefix, last = toComplete[:i+1], toComplete[i+1:]
			chosen = strings.Split(toComplete[:i], ",")
		}
	}
	var out []string
	for _, c := range candidates {
		value, _, _ := strings.Cut(c, "\t")
		if strings.HasPrefix(value, last) && !slices.Contains(chosen, value) {
			out = append(out, prefix+c)
		}
	}
	return out
}

// inventoryGroups are the inventory's group names with their descriptions.
func inventoryGroups(inv *inventory.Inventory) []string {
	if inv == nil {
		return nil
	}
	var out []string
	for _, name := range inv.GroupNames() {
		out = append(out, name+"\t"+inv.Groups[name].Description)
	}
	return out
}

// completeGroupFlag completes a --group flag with the inventory's groups.
func completeGroupFlag(cmd *cobra.Command, f *factory, flag string) {
	list := cmd.Flags().Lookup(flag).Value.Type() == "stringSlice"
	_ = cmd.RegisterFlagCompletionFunc(flag, func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return listCompletion(toComplete, inventoryGroups(completionInventory(cmd, f)), list), cobra.ShellCompDirectiveNoFileComp
	})
}

// profileCandidates are profile ids (of --group when it is set) with their
// checkpoint and kind.
func profileCandidates(cmd *cobra.Command, f *factory) []string {
	inv := completionInventory(cmd, f)
	if inv == nil {
		return nil
	}
	profiles := inv.Profiles()
	if g := cmd.Flags().Lookup("group"); g != nil && g.Changed {
		if grp, ok := inv.Groups[g.Value.String()]; ok {
			profiles = grp.Profiles
		}
	}
	out := make([]string, 0, len(profiles))
	for _, p := range profiles {
		out = append(out, p.ID+"\t"+p.Kind+" "+p.Checkpoint)
	}
	return out
}

// completeProfilesFlag completes a comma-separated list of profile ids.
func completeProfilesFlag(cmd *cobra.Command, f *factory, flag string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return listCompletion(toComplete, profileCandidates(cmd, f), true), cobra.ShellCompDirectiveNoFileComp
	})
}

// completeProfileArg completes a positional profile id (inventory show).
func completeProfileArg(f *factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return listCompletion(toComplete, profileCandidates(cmd, f), false), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeGPUsFlag completes --gpus: "cpu", "cpu:N", and the indexes of
// the GPUs nvidia-smi lists (comma-separated, each once).
func completeGPUsFlag(cmd *cobra.Command, f *factory) {
	_ = cmd.RegisterFlagCompletionFunc("gpus", func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var gpus []string
		ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
		defer cancel()
		if list, err := (qual.NvidiaSMI{Runner: f.Runner}).List(ctx); err == nil {
			for _, g := range list {
				gpus = append(gpus, g.Index+"\t"+g.Name)
			}
		}
		if strings.Contains(toComplete, ",") {
			return listCompletion(toComplete, gpus, true), cobra.ShellCompDirectiveNoFileComp
		}
		cands := append([]string{"cpu\tone CPU slot", "cpu:2\ttwo CPU slots", "cpu:4\tfour CPU slots"}, gpus...)
		return listCompletion(toComplete, cands, false), cobra.ShellCompDirectiveNoFileComp
	})
}

// completeSpecGroupsFlag completes a --group flag with the groups of the
// spec-groups file (the built-in one unless configured).
func completeSpecGroupsFlag(cmd *cobra.Command, f *factory, flag string) {
	list := cmd.Flags().Lookup(flag).Value.Type() == "stringSlice"
	_ = cmd.RegisterFlagCompletionFunc(flag, func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cfg, err := loadConfig(cmd, f.Getenv)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		sg, err := specs.LoadConfig(cfg.SpecGroups)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return listCompletion(toComplete, sg.GroupNames(), list), cobra.ShellCompDirectiveNoFileComp
	})
}

// hasEvidence says whether dir looks like OUT/<group>: run's inventory.json
// or results.json, or a profile directory with a result.json.
func hasEvidence(dir string) bool {
	for _, marker := range []string{"inventory.json", "results.json", "*/result.json"} {
		if m, _ := filepath.Glob(filepath.Join(dir, marker)); len(m) > 0 {
			return true
		}
	}
	return false
}

// completeEvidenceGroups completes report's --group with the groups found
// under the --from roots (see hasEvidence) and the inventory's groups.
func completeEvidenceGroups(cmd *cobra.Command, f *factory) {
	_ = cmd.RegisterFlagCompletionFunc("group", func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		roots, _ := cmd.Flags().GetStringArray("from")
		if len(roots) == 0 {
			if cfg, err := loadConfig(cmd, f.Getenv); err == nil {
				roots = []string{cfg.Out}
			}
		}
		seen := map[string]bool{}
		var out []string
		for _, root := range roots {
			entries, _ := os.ReadDir(root)
			for _, e := range entries {
				if !e.IsDir() || seen[e.Name()] {
					continue
				}
				if hasEvidence(filepath.Join(root, e.Name())) {
					seen[e.Name()] = true
					out = append(out, e.Name()+"\tevidence in "+root)
				}
			}
		}
		for _, g := range inventoryGroups(completionInventory(cmd, f)) {
			if name, _, _ := strings.Cut(g, "\t"); !seen[name] {
				seen[name] = true
				out = append(out, g)
			}
		}
		sort.Strings(out)
		return listCompletion(toComplete, out, false), cobra.ShellCompDirectiveNoFileComp
	})
}
