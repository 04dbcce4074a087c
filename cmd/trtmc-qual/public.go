package main

import (
	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// The flags of publication; what published text knows beyond the
// evidence (this host's roots and identity) is assembled by
// reports/publish (ForHost). Shared by run, report, export and ci.

// addRootFlag adds --root NAME=DIR (repeatable).
func addRootFlag(cmd *cobra.Command, roots *[]string) {
	cmd.Flags().StringArrayVar(roots, "root", nil, "a named root NAME=DIR: published text writes paths under DIR as $NAME/... (repeatable; see docs/reports.md \"Publishing results\")")
}

// parseRoots reads --root values.
func parseRoots(values []string) ([]verdict.Root, error) {
	var out []verdict.Root
	for _, v := range values {
		r, err := publish.ParseRoot(v)
		if err != nil {
			return nil, flagErrorf("--root: %v", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// publicOptions is the Publisher of this host for cfg (nil: no
// configuration) and the declared roots.
func publicOptions(cfg *Config, getenv func(string) string, declared []verdict.Root) publish.Publisher {
	file, aiperf := configPaths(cfg)
	return publish.ForHost(file, aiperf, getenv, declared)
}

// hostRoots are the roots this host's configuration names
// (publish.HostRoots).
func hostRoots(cfg *Config, getenv func(string) string) []verdict.Root {
	file, aiperf := configPaths(cfg)
	return publish.HostRoots(file, aiperf, getenv)
}

// configPaths are the configuration file and the configured aiperf.
func configPaths(cfg *Config) (file, aiperf string) {
	if cfg == nil {
		return "", ""
	}
	return cfg.File, cfg.AIPerf
}
