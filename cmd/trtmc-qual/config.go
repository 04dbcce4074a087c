package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/slurm"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// defaultConfigFile is read from the current directory when --config is
// not given; the repository root ships one so `bin/trtmc-qual ...` needs no
// flags there.
const defaultConfigFile = "trtmc-qual.yaml"

// envPrefix prefixes every environment variable: TRTMC_QUAL_AIPERF, ...
const envPrefix = "TRTMC_QUAL"

// Config is the resolved configuration: flags > TRTMC_QUAL_* environment >
// config file > defaults, resolved once per invocation. Domain packages get
// the values they need from here; none of them sees viper.
type Config struct {
	// File is the config file that was read, if any.
	File string `mapstructure:"-"`
	// sources says where each key's value came from (Source).
	sources map[string]string

	Inventory     []string `mapstructure:"inventory"`
	Families      string   `mapstructure:"families"`
	AIPerf        string   `mapstructure:"aiperf"`
	AIPerfVersion string   `mapstructure:"aiperf_version"`
	AllowMismatch bool     `mapstructure:"allow_aiperf_version_mismatch"`
	Tokenizer     string   `mapstructure:"tokenizer"`
	BinDir        string   `mapstructure:"bin_dir"`
	Out           string   `mapstructure:"out"`
	GPUs          string   `mapstructure:"gpus"`
	// Secrets names environment variables whose values never reach evidence.
	Secrets []string `mapstructure:"secrets"`
	// SpecGroups is the task-strategy → group mapping for reconcile.
	SpecGroups string `mapstructure:"spec_groups"`
	// AllowNonLoopback permits servers bound beyond loopback.
	AllowNonLoopback bool `mapstructure:"allow_non_loopback"`
	// AllowHardwareMismatch runs profiles outside their hardware scope.
	AllowHardwareMismatch bool `mapstructure:"allow_hardware_mismatch"`
	// Executor runs a group's checkpoints: local (this host) or slurm.
	Executor string `mapstructure:"executor"`
	// Slurm is the `slurm:` block, for --executor slurm.
	Slurm SlurmConfig `mapstructure:"slurm"`
}

// SlurmConfig is the `slurm:` block of the config file (docs/slurm.md):
// the executor's own settings, resolved straight into slurm.Config (its
// mapstructure tags are the block's keys), and the two that only this
// wiring uses.
type SlurmConfig struct {
	slurm.Config `mapstructure:",squash"`
	// Out is the shared evidence root the tasks write into (default: out).
	Out string `mapstructure:"out"`
	// TrtmcQual is the trtmc-qual binary the nodes run (default: this one).
	TrtmcQual string `mapstructure:"trtmc_qual"`
}

// configDefaults are the values used when nothing else sets a key.
var configDefaults = map[string]any{
	"inventory":                     []string{},
	"families":                      "",
	"aiperf":                        "aiperf",
	"aiperf_version":                "0.13.0",
	"allow_aiperf_version_mismatch": false,
	"tokenizer":                     "",
	"bin_dir":                       "",
	"out":                           "out",
	"gpus":                          "",
	"secrets":                       []string{"TRTMC_SERVE_TOKEN"},
	"spec_groups":                   "",
	"allow_non_loopback":            false,
	"allow_hardware_mismatch":       false,
	"executor":                      "local",
	"slurm.partition":               "",
	"slurm.account":                 "",
	"slurm.time_limit":              "0s",
	"slurm.sbatch_args":             []string{},
	"slurm.gpu_request":             "gres",
	"slurm.cpus_per_task":           0,
	"slurm.max_parallel":            0,
	"slurm.poll_interval":           "15s",
	"slurm.out":                     "",
	"slurm.trtmc_qual":              "",
	"slurm.commands_dir":            "",
}

// mapKeys are config keys whose value is a map: the file's keys under them
// ("slurm.constraints.gb300") are its entries, not unknown keys.
var mapKeys = []string{"slurm.constraints"}

// pathKeys are resolved relative to the config file when they come from it.
var pathKeys = map[string]bool{"inventory": true, "families": true, "aiperf": true, "tokenizer": true,
	"bin_dir": true, "out": true, "spec_groups": true, "slurm.out": true, "slurm.trtmc_qual": true, "slurm.commands_dir": true}

// flagKey maps a flag name to its config key: --aiperf-version → aiperf_version.
func flagKey(name string) string { return strings.ReplaceAll(name, "-", "_") }

// envName is a config key's environment variable: slurm.time_limit →
// TRTMC_QUAL_SLURM_TIME_LIMIT.
func envName(key string) string {
	return envPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

func isMapEntry(key string) bool {
	for _, m := range mapKeys {
		if strings.HasPrefix(key, m+".") {
			return true
		}
	}
	return false
}

// loadConfig resolves the configuration for the command being run, in
// named steps from the lowest precedence up: defaults, the flags bound,
// the environment, the config file, then the typed Config with where each
// value came from. getenv is injected so tests can control the
// environment.
func loadConfig(cmd *cobra.Command, getenv func(string) string) (*Config, error) {
	r := &configResolver{cmd: cmd, getenv: getenv, v: viper.New(), envSet: map[string]bool{}, fileKeys: map[string]bool{}}
	for k, d := range configDefaults {
		r.v.SetDefault(k, d)
	}
	if err := r.bindFlags(); err != nil {
		return nil, err
	}
	r.applyEnv()
	r.findFile()
	if err := r.applyFile(); err != nil {
		return nil, err
	}
	return r.decode()
}

// configResolver is one resolution of loadConfig: the viper instance it
// fills and what each source set.
type configResolver struct {
	cmd    *cobra.Command
	getenv func(string) string
	v      *viper.Viper
	// envSet and fileKeys are the keys the environment and the file set.
	envSet, fileKeys map[string]bool
	// file is the config file to read ("" none); explicit when --config or
	// TRTMC_QUAL_CONFIG named it (then it must exist).
	file     string
	explicit bool
}

// bindFlags binds the verb's flags and the inherited persistent flags
// under their snake_case keys.
func (r *configResolver) bindFlags() error {
	for _, fs := range []*pflag.FlagSet{r.cmd.Flags(), r.cmd.InheritedFlags()} {
		var err error
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Name == "config" || f.Name == "help" {
				return
			}
			if e := r.v.BindPFlag(flagKey(f.Name), f); e != nil && err == nil {
				err = e
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// applyEnv sets every key whose TRTMC_QUAL_<KEY> variable is set (read
// through getenv, not os.Getenv), unless its flag was given; a list key
// takes a comma-separated value.
func (r *configResolver) applyEnv() {
	for _, k := range r.v.AllKeys() {
		val := r.getenv(envName(k))
		if val == "" {
			continue
		}
		r.envSet[k] = true
		if flagChanged(r.cmd, k) {
			continue
		}
		if _, isList := configDefaults[k].([]string); isList {
			r.v.Set(k, strings.Split(val, ","))
		} else {
			r.v.Set(k, val)
		}
	}
}

// findFile picks the config file: --config, else TRTMC_QUAL_CONFIG (both
// explicit), else ./trtmc-qual.yaml when it exists.
func (r *configResolver) findFile() {
	if f := r.cmd.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
		r.file, r.explicit = f.Value.String(), true
	} else if val := r.getenv(envPrefix + "_CONFIG"); val != "" {
		r.file, r.explicit = val, true
	} else if _, err := os.Stat(defaultConfigFile); err == nil {
		r.file = defaultConfigFile
	}
}

// applyFile reads the config file and sets each of its keys that no flag
// or variable set, checking that every key is known and of its type.
func (r *configResolver) applyFile() error {
	if r.file == "" {
		return nil
	}
	fv, err := r.readFile()
	if err != nil {
		return err
	}
	for _, k := range fv.AllKeys() {
		if err := r.applyFileKey(k, fv.Get(k)); err != nil {
			return err
		}
	}
	return nil
}

// readFile parses the config file, read by the harness, not viper: a
// regular file under the size cap, so a FIFO or a device named as the
// config cannot hang or exhaust the process. A default file that is gone
// reads as empty.
func (r *configResolver) readFile() (*viper.Viper, error) {
	fv := viper.New()
	fv.SetConfigType("yaml")
	data, err := fileio.ReadFile(r.cmd.Context(), r.file, fileio.MaxConfigBytes)
	switch {
	case err == nil:
		if err := fv.ReadConfig(bytes.NewReader(data)); err != nil {
			return nil, &configError{fmt.Errorf("config file %s: %w", r.file, err)}
		}
	case r.explicit || !errors.Is(err, fs.ErrNotExist):
		return nil, &configError{fmt.Errorf("config file %s: %s", r.file, fileio.ReadProblem("the config file", r.file, err))}
	}
	return fv, nil
}

// applyFileKey checks one key of the file and sets it, a path relative to
// the file's directory, unless a flag or variable set it.
func (r *configResolver) applyFileKey(k string, val any) error {
	if _, ok := configDefaults[k]; !ok && !isMapEntry(k) {
		return &configError{fmt.Errorf("config file %s: unknown key %q", r.file, k)}
	}
	r.fileKeys[k] = true
	if err := checkConfigType(k, val); err != nil {
		return &configError{fmt.Errorf("config file %s: %w", r.file, err)}
	}
	if flagChanged(r.cmd, k) || r.envSet[k] {
		return nil
	}
	if pathKeys[k] {
		dir, err := filepath.Abs(filepath.Dir(r.file))
		if err != nil {
			return err
		}
		val = relTo(dir, k, val)
	}
	r.v.Set(k, val)
	return nil
}

// decode unmarshals the resolved keys into Config, records where each
// value came from, and checks the words.
func (r *configResolver) decode() (*Config, error) {
	cfg := &Config{File: r.file, sources: map[string]string{}}
	if err := r.v.Unmarshal(cfg); err != nil {
		return nil, &configError{fmt.Errorf("configuration: %w", err)}
	}
	for _, k := range r.v.AllKeys() {
		switch {
		case flagChanged(r.cmd, k):
			cfg.sources[k] = "--" + strings.ReplaceAll(k, "_", "-")
		case r.envSet[k]:
			cfg.sources[k] = envName(k)
		case r.fileKeys[k]:
			cfg.sources[k] = fmt.Sprintf("config file %s: %s", r.file, k)
		}
	}
	if err := cfg.checkWords(); err != nil {
		return nil, &configError{err}
	}
	cfg.absOut()
	return cfg, nil
}

// absOut makes the evidence roots absolute, once, here: every path of the
// run under them (the children's argv, the recorded commands, the roots
// the published text maps to $OUT) is then the same whether --out was
// given relative (out/demo) or absolute — a relative one otherwise left
// `--input-file out/demo/…` in the recorded AIPerf argv, unmapped.
func (c *Config) absOut() {
	for _, p := range []*string{&c.Out, &c.Slurm.Out} {
		if *p != "" {
			*p = fileio.Abs(*p)
		}
	}
}

// Source says where a key's value came from, as a user would name it:
// "--gpus", "TRTMC_QUAL_GPUS" or "config file c.yaml: gpus"; the key
// itself for a default.
func (c *Config) Source(key string) string {
	if s := c.sources[key]; s != "" {
		return s
	}
	return key
}

// versionRE is what an AIPerf version may look like (PEP 440's characters).
var versionRE = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+!_-]*$`)

// checkWords trims the values that are words — an environment variable or
// a YAML scalar easily carries a stray space — and checks their syntax,
// naming where a bad one came from (flag, environment or file). Usage
// errors, exit 2, on every verb: the configuration itself is wrong.
func (c *Config) checkWords() error {
	for _, w := range []*string{&c.AIPerfVersion, &c.GPUs, &c.Executor, &c.Slurm.GPURequest} {
		*w = strings.TrimSpace(*w)
	}
	if !versionRE.MatchString(c.AIPerfVersion) {
		return fmt.Errorf("%s %q: not a version (e.g. 0.13.0)", c.Source("aiperf_version"), c.AIPerfVersion)
	}
	switch c.Executor {
	case executorLocal, executorSlurm:
	default:
		return fmt.Errorf("%s %q: valid values are %s, %s", c.Source("executor"), c.Executor, executorLocal, executorSlurm)
	}
	if c.GPUs != slurm.GPUSelectionSlurm {
		if err := qual.CheckGPUSelection(c.GPUs); err != nil {
			return fmt.Errorf("%s %w", c.Source("gpus"), err)
		}
	}
	return nil
}

// checkConfigType checks a config file value against its key's default:
// `inventory: 5` is a mistake to name, not a file called "5".
func checkConfigType(key string, val any) error {
	want := ""
	switch configDefaults[key].(type) {
	case []string:
		switch x := val.(type) {
		case string:
			return nil
		case []any:
			for i, e := range x {
				if _, ok := e.(string); !ok {
					return fmt.Errorf("%s[%d]: must be a string, got %v", key, i, e)
				}
			}
			return nil
		}
		want = "a string or a list of strings"
	case string:
		switch val.(type) {
		case string, int, float64: // gpus: 0 is GPU "0"
			return nil
		}
		want = "a string"
	case bool:
		if _, ok := val.(bool); ok {
			return nil
		}
		want = "true or false"
	case int:
		if _, ok := val.(int); ok {
			return nil
		}
		want = "an integer"
	default:
		return nil
	}
	return fmt.Errorf("%s: must be %s, got %v", key, want, val)
}

func flagChanged(cmd *cobra.Command, key string) bool {
	name := strings.ReplaceAll(key, "_", "-")
	if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
		return true
	}
	if f := cmd.InheritedFlags().Lookup(name); f != nil && f.Changed {
		return true
	}
	return false
}

// relTo makes config-file paths relative to the config file's directory.
// A bare command name for `aiperf` (no slash) stays a PATH lookup.
func relTo(dir, key string, val any) any {
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) || key == "aiperf" && !strings.ContainsRune(p, '/') {
			return p
		}
		return filepath.Clean(filepath.Join(dir, p))
	}
	switch x := val.(type) {
	case string:
		return rel(x)
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = rel(fmt.Sprint(e))
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = rel(e)
		}
		return out
	}
	return val
}

// configError is a bad configuration: a usage error (exitcodes.go).
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }
