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
	"time"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/slurm"
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

// SlurmConfig is the `slurm:` block of the config file (docs/slurm.md).
type SlurmConfig struct {
	Partition string `mapstructure:"partition"`
	Account   string `mapstructure:"account"`
	// TimeLimit overrides every task's time limit ("" or 0: from each
	// profile's family timeouts).
	TimeLimit   time.Duration     `mapstructure:"time_limit"`
	SbatchArgs  []string          `mapstructure:"sbatch_args"`
	Constraints map[string]string `mapstructure:"constraints"`
	GPURequest  string            `mapstructure:"gpu_request"`
	CPUsPerTask int               `mapstructure:"cpus_per_task"`
	MaxParallel int               `mapstructure:"max_parallel"`
	// PollInterval is how often the driver polls slurmctld.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// Out is the shared evidence root the tasks write into (default: out).
	Out string `mapstructure:"out"`
	// TrtmcQual is the trtmc-qual binary the nodes run (default: this one).
	TrtmcQual string `mapstructure:"trtmc_qual"`
	// CommandsDir holds sbatch, scontrol and scancel (default: PATH).
	CommandsDir string `mapstructure:"commands_dir"`
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

// loadConfig resolves the configuration for the command being run. getenv
// is injected so tests can control the environment.
func loadConfig(cmd *cobra.Command, getenv func(string) string) (*Config, error) {
	v := viper.New()
	for k, d := range configDefaults {
		v.SetDefault(k, d)
	}
	// Flags of the verb and inherited persistent flags, bound under snake_case keys.
	bind := func(fs *pflag.FlagSet) error {
		var err error
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Name == "config" || f.Name == "help" {
				return
			}
			if e := v.BindPFlag(flagKey(f.Name), f); e != nil && err == nil {
				err = e
			}
		})
		return err
	}
	if err := bind(cmd.Flags()); err != nil {
		return nil, err
	}
	if err := bind(cmd.InheritedFlags()); err != nil {
		return nil, err
	}
	// Environment: TRTMC_QUAL_<KEY>. Read through getenv, not os.Getenv.
	envSet := map[string]bool{}
	for _, k := range v.AllKeys() {
		if val := getenv(envName(k)); val != "" {
			envSet[k] = true
			if !flagChanged(cmd, k) {
				if _, isList := configDefaults[k].([]string); isList {
					v.Set(k, strings.Split(val, ","))
				} else {
					v.Set(k, val)
				}
			}
		}
	}
	// Config file.
	file, explicit := "", false
	if f := cmd.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
		file, explicit = f.Value.String(), true
	} else if val := getenv(envPrefix + "_CONFIG"); val != "" {
		file, explicit = val, true
	} else if _, err := os.Stat(defaultConfigFile); err == nil {
		file = defaultConfigFile
	}
	fileKeys := map[string]bool{}
	if file != "" {
		fv := viper.New()
		fv.SetConfigType("yaml")
		// Read by the harness, not viper: a regular file under the size
		// cap, so a FIFO or a device named as the config cannot hang or
		// exhaust the process.
		data, err := fileio.ReadFile(cmd.Context(), file, fileio.MaxConfigBytes)
		switch {
		case err == nil:
			if err := fv.ReadConfig(bytes.NewReader(data)); err != nil {
				return nil, &configError{fmt.Errorf("config file %s: %w", file, err)}
			}
		case explicit || !errors.Is(err, fs.ErrNotExist):
			return nil, &configError{fmt.Errorf("config file %s: %s", file, fileio.ReadProblem("the config file", file, err))}
		}
		for _, k := range fv.AllKeys() {
			if _, ok := configDefaults[k]; !ok && !isMapEntry(k) {
				return nil, &configError{fmt.Errorf("config file %s: unknown key %q", file, k)}
			}
			fileKeys[k] = true
			if err := checkConfigType(k, fv.Get(k)); err != nil {
				return nil, &configError{fmt.Errorf("config file %s: %w", file, err)}
			}
			if !flagChanged(cmd, k) && !envSet[k] {
				val := fv.Get(k)
				if pathKeys[k] {
					dir, err := filepath.Abs(filepath.Dir(file))
					if err != nil {
						return nil, err
					}
					val = relTo(dir, k, val)
				}
				v.Set(k, val)
			}
		}
	}
	cfg := &Config{File: file, sources: map[string]string{}}
	if err := v.Unmarshal(cfg); err != nil {
		return nil, &configError{fmt.Errorf("configuration: %w", err)}
	}
	for _, k := range v.AllKeys() {
		switch {
		case flagChanged(cmd, k):
			cfg.sources[k] = "--" + strings.ReplaceAll(k, "_", "-")
		case envSet[k]:
			cfg.sources[k] = envName(k)
		case fileKeys[k]:
			cfg.sources[k] = fmt.Sprintf("config file %s: %s", file, k)
		}
	}
	if err := cfg.checkWords(); err != nil {
		return nil, &configError{err}
	}
	return cfg, nil
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

// configError is a bad configuration: exit 2.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }
func (e *configError) ExitCode() int { return int(exitUsage) }
