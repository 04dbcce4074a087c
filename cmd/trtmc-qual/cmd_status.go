package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/qual/slurm"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

type statusOptions struct {
	IO     *IOStreams
	Runner proc.Runner
	Now    func() time.Time
	Out    string
	Groups []string
	Wait   bool
	Format string
	// CommandsDir and Poll are the configuration's slurm.commands_dir and
	// slurm.poll_interval.
	CommandsDir string
	Poll        time.Duration
}

// statusFormats are status's -o/--format values.
var statusFormats = formats("table", "table", "json")

// Validate checks the format.
func (o *statusOptions) Validate() error { return statusFormats.check(o.Format) }

func newStatusCmd(f *factory, runF func(*statusOptions) error) *cobra.Command {
	opts := &statusOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "status [--out DIR] [--group G] [--wait]",
		Short: "Show (and collect) what a Slurm submission of run --executor slurm has done",
		Long: `Show the Slurm tasks a ` + "`run --executor slurm`" + ` submitted into an evidence root
(typically with --detach): one line per profile with its Slurm task, Slurm's
state, the node and the row's verdict once the task has ended.

status settles what ended exactly as the attached driver would: a task that
ended the way a run ends keeps the row it wrote; one that failed, timed out,
was preempted, cancelled or lost its node gets an error row naming the Slurm
job, state and reason; one that never started gets a not-run row. Once every
task has ended it writes OUT/<group>/results.*, as the driver does, so
` + "`trtmc-qual report`" + ` reads the same evidence. --wait follows the tasks until
every one has ended (Ctrl-C stops watching; it never cancels the job).

` + exitHelp(
			exitOutcome{exitOK, "while tasks are still queued or running, or when every row is qualified"},
			exitOutcome{exitFailed, "when every task has ended and a row is not qualified"},
			exitOutcome{exitUsage, "when the evidence root has no Slurm submission (or for a usage error)"},
			exitOutcome{exitSetup, "when Slurm cannot be asked"},
			exitOutcome{exitInterrupted, "when interrupted"}),
		Example: `  # after run --detach
  trtmc-qual status --out /lustre/qual/out
  trtmc-qual status --out /lustre/qual/out --group vlm --wait && trtmc-qual report --from /lustre/qual/out --group vlm`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			opts.Out = slurm.EvidenceRoot(f.Config.Out, f.Config.Slurm.Out, cmd.Flags().Changed("out"))
			opts.Runner, opts.Now = f.Runner, f.Now
			opts.CommandsDir, opts.Poll = f.Config.Slurm.CommandsDir, f.Config.Slurm.PollInterval
			if runF != nil {
				return runF(opts)
			}
			return runStatus(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.String("out", "out", "evidence root of the submission (default: slurm.out, else out)")
	fl.StringSliceVarP(&opts.Groups, "group", "g", nil, "only these groups (default: every group submitted into --out)")
	fl.BoolVar(&opts.Wait, "wait", false, "follow the tasks until every one has ended")
	addFormatFlag(cmd, &opts.Format, statusFormats)
	_ = cmd.MarkFlagDirname("out")
	return cmd
}

// statusRow is one task of `status --format json`.
type statusRow struct {
	Group    string `json:"group"`
	Profile  string `json:"profile"`
	Task     string `json:"slurm_task"`
	Adopted  bool   `json:"adopted,omitempty"`
	State    string `json:"state"`
	Reason   string `json:"reason,omitempty"`
	ExitCode string `json:"exit_code,omitempty"`
	Node     string `json:"node,omitempty"`
	Verdict  string `json:"verdict,omitempty"`
}

func runStatus(ctx context.Context, opts *statusOptions) error {
	groups := opts.Groups
	if len(groups) == 0 {
		var err error
		if groups, err = slurm.RecordedGroups(opts.Out); err != nil {
			return err
		}
		if len(groups) == 0 {
			return withCode(exitUsage, fmt.Errorf("no Slurm submission recorded under %s (run --executor slurm writes %s/.slurm/<group>/job.json)", opts.Out, opts.Out))
		}
	}
	var rows []statusRow
	var results []*verdict.Result
	done := true
	var firstErr error
	for _, g := range groups {
		gs, err := slurm.Status(ctx, slurm.StatusOptions{Runner: opts.Runner, CommandsDir: opts.CommandsDir,
			Out: opts.Out, Group: g, Wait: opts.Wait, Poll: opts.Poll, Log: opts.IO.ErrOut, Now: opts.Now,
			RowExits: rowExitStatuses()})
		if errors.Is(err, slurm.ErrNoRecord) {
			return withCode(exitUsage, slurmGroupHint(err, opts.Out, g))
		}
		if gs == nil {
			return err
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		done = done && gs.Done
		for _, t := range gs.Tasks {
			r := statusRow{Group: g, Profile: t.Ref.Profile, Task: t.Ref.ID(), Adopted: t.Ref.Adopted, State: "UNKNOWN"}
			if t.State != nil {
				r.State, r.Reason, r.ExitCode, r.Node = t.State.State, t.State.Reason, t.State.ExitCode, t.State.Node
			} else if t.Row != nil {
				r.State = "GONE"
			}
			if t.Row != nil {
				r.Verdict = t.Row.Verdict
				results = append(results, t.Row)
			}
			rows = append(rows, r)
		}
	}
	if err := printStatus(opts.IO, rows, opts.Format); err != nil {
		return err
	}
	if firstErr != nil {
		return firstErr
	}
	if !done {
		fmt.Fprintln(opts.IO.ErrOut, "status: tasks are still queued or running; --wait follows them to their end")
		return nil
	}
	return runVerdictError(results)
}

func printStatus(io *IOStreams, rows []statusRow, format string) error {
	if format == "json" {
		if rows == nil {
			rows = []statusRow{}
		}
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	w := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tPROFILE\tSLURM TASK\tSTATE\tNODE\tVERDICT")
	for _, r := range rows {
		state := r.State
		var extra []string
		if r.Reason != "" && r.Reason != "None" {
			extra = append(extra, r.Reason)
		}
		if r.ExitCode != "" && r.ExitCode != "0:0" {
			extra = append(extra, "exit "+r.ExitCode)
		}
		if len(extra) > 0 {
			state += " (" + strings.Join(extra, ", ") + ")"
		}
		task := r.Task
		if r.Adopted {
			task += " (adopted)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Group, r.Profile, task, state, dash(r.Node), dash(r.Verdict))
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
