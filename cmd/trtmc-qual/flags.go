package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trtmc-qual/trtmc-qual/reports"
)

// Flags that mean the same thing on every verb are declared here, once:
// -o/--format (the output format), the inventory and AIPerf flag groups,
// and the rule for file flags. Verbs call these instead of declaring their
// own, so one name never means two things.

// formatSpec is a verb's -o/--format: its default and the values it
// accepts. Each verb declares one (runFormats, reportFormats, ...), which
// both its flag (addFormatFlag) and its Validate use.
type formatSpec struct {
	// Default is the flag's default; reports.FormatAuto ("") means a table
	// on a terminal and tab-separated lines when piped.
	Default string
	Allowed []string
}

// formats is a formatSpec literal: formats(def, allowed...).
func formats(def string, allowed ...string) formatSpec {
	return formatSpec{Default: def, Allowed: allowed}
}

// formatHelp says in a few words what each format is, for completion.
var formatHelp = map[string]string{
	reports.FormatTable:    "boxed table, for a terminal",
	reports.FormatTSV:      "tab-separated, no header",
	reports.FormatCSV:      "CSV with a header",
	reports.FormatMarkdown: "GitHub-flavoured Markdown",
	reports.FormatJSON:     "JSON",
	reports.FormatHTML:     "self-contained HTML report",
	"text":                 "plain text lines",
}

// addFormatFlag declares -o/--format with spec's default and values.
func addFormatFlag(cmd *cobra.Command, p *string, spec formatSpec) {
	fl := cmd.Flags()
	help := "output format: " + orList(spec.Allowed)
	if spec.Default == reports.FormatAuto {
		help += " (default: table on a terminal, tsv when piped)"
	}
	fl.StringVarP(p, "format", "o", spec.Default, help)
	_ = cmd.RegisterFlagCompletionFunc("format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		out := make([]string, len(spec.Allowed))
		for i, f := range spec.Allowed {
			out[i] = f + "\t" + formatHelp[f]
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}

// check validates a -o/--format value; the empty (automatic) value is
// accepted when it is the default.
func (s formatSpec) check(v string) error {
	if v == reports.FormatAuto && s.Default == reports.FormatAuto {
		return nil
	}
	if err := reports.CheckFormat(v, s.Allowed...); err != nil {
		return &flagError{fmt.Errorf("--format: %w", err)}
	}
	return nil
}

// fileFormat is the format verb writes to the file a file flag names,
// given its --format value: the file's extension selects it when --format
// is not given and must agree with it when both are; a name without a
// known extension needs --format.
func (s formatSpec) fileFormat(verb, flag, path, format string) (string, error) {
	allowed := s.Allowed
	ext := reports.FormatOfFile(path)
	switch {
	case ext != "" && !slices.Contains(allowed, ext):
		return "", flagErrorf("--%s %s: the extension says %s, which %s does not write (formats: %s)",
			flag, path, ext, verb, strings.Join(allowed, ", "))
	case ext == reports.FormatMarkdown && format == reports.FormatSummary:
		return format, nil // the summary is Markdown
	case ext != "" && format != reports.FormatAuto && format != ext:
		return "", flagErrorf("--%s %s: the extension says %s but --format says %s; they must agree", flag, path, ext, format)
	case ext != "":
		return ext, nil
	case format != reports.FormatAuto:
		return format, nil
	}
	hint := ""
	if slices.Contains(allowed, path) {
		hint = fmt.Sprintf(" (did you mean --format %s?)", path)
	}
	return "", flagErrorf("--%s %s: cannot tell the format from the file name%s; name it with an extension (%s) or pass --format",
		flag, path, hint, extList(allowed))
}

// checkFileKind checks a file flag whose format is fixed (--junit is XML,
// --summary and --update-doc Markdown): an extension naming another known
// format is refused, so `--junit out.json` cannot write XML into a .json.
func checkFileKind(flag, path, want string) error {
	if path == "" {
		return nil
	}
	if got := reports.FormatOfFile(path); got != "" && got != want {
		return flagErrorf("--%s %s: this flag writes %s, but the extension says %s", flag, path, want, got)
	}
	return checkOutputFile("--"+flag, path)
}

// addFileFlag declares a flag that names a file to write, completing file
// names with the given extensions.
func addFileFlag(cmd *cobra.Command, p *string, name, usage string, exts ...string) {
	cmd.Flags().StringVar(p, name, "", usage)
	_ = cmd.MarkFlagFilename(name, exts...)
}

// addInventoryFlags declares the flags that locate the inventory and the
// family configuration (verbs that read them: inventory, run, ci).
func addInventoryFlags(fs *pflag.FlagSet) {
	fs.StringSlice("inventory", nil, "inventory YAML file(s)")
	fs.String("families", "", "family configuration (families.yaml)")
}

// addAIPerfFlags declares the flags of the qualification pipeline's
// children (verbs that run it: run, ci --smoke).
func addAIPerfFlags(fs *pflag.FlagSet) {
	fs.String("aiperf", "aiperf", "the aiperf executable")
	fs.String("aiperf-version", "0.13.0", "the AIPerf version required")
	fs.Bool("allow-aiperf-version-mismatch", false, "run with another AIPerf version (recorded in the evidence)")
	fs.String("tokenizer", "", "local tokenizer directory for AIPerf chat")
	fs.String("bin-dir", "", "directory of harness-side binaries ({bin} in family argv)")
}

// markInputFiles makes the inventory, families and config flags complete
// YAML files, wherever they are declared on cmd.
func markInputFiles(cmd *cobra.Command) {
	for _, name := range []string{"inventory", "families", "spec-groups"} {
		if cmd.Flags().Lookup(name) != nil {
			_ = cmd.MarkFlagFilename(name, "yaml", "yml")
		} else if cmd.PersistentFlags().Lookup(name) != nil {
			_ = cmd.MarkPersistentFlagFilename(name, "yaml", "yml")
		}
	}
}

func orList(vals []string) string {
	switch len(vals) {
	case 0:
		return ""
	case 1:
		return vals[0]
	}
	return strings.Join(vals[:len(vals)-1], ", ") + " or " + vals[len(vals)-1]
}

func extList(formats []string) string {
	var out []string
	for _, f := range formats {
		if e := reports.ExtOf(f); e != "" {
			out = append(out, e)
		}
	}
	return strings.Join(out, ", ")
}
