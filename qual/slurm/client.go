package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
)

// client runs Slurm's commands through the harness's exec interface.
type client struct {
	runner proc.Runner
	// dir holds sbatch, scontrol and scancel; "" looks them up on PATH.
	dir string
}

func (c client) bin(name string) string {
	if c.dir == "" {
		return name
	}
	return filepath.Join(c.dir, name)
}

// commandTimeout bounds one Slurm command: slurmctld answers in
// milliseconds; a hung one must not hang the driver.
const commandTimeout = 60 * time.Second

// CommandError is a Slurm command that failed, with Slurm's own words.
type CommandError struct {
	Argv    []string
	Message string
	Err     error
}

func (e *CommandError) Error() string {
	// Slurm's own message names the command ("sbatch: error: ...").
	if msg := strings.TrimSpace(e.Message); msg != "" {
		return msg
	}
	return fmt.Sprintf("%s: %v", e.Argv[0], e.Err)
}

func (e *CommandError) Unwrap() error { return e.Err }

func (c client) run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	argv := append([]string{c.bin(name)}, args...)
	var stdout, stderr bytes.Buffer
	_, err := c.runner.Run(ctx, proc.Spec{Name: name, Argv: argv, Stdout: &stdout, Stderr: &stderr, Grace: 5 * time.Second})
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return stdout.String(), &CommandError{Argv: argv, Message: stderr.String(), Err: err}
	}
	return stdout.String(), nil
}

// submit runs sbatch --parsable and returns the job id it printed.
func (c client) submit(ctx context.Context, args []string) (string, error) {
	out, err := c.run(ctx, "sbatch", append([]string{"--parsable"}, args...)...)
	if err != nil {
		return "", err
	}
	// "12" or "12;cluster"; sbatch may print warnings before it.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	id, _, _ := strings.Cut(strings.TrimSpace(lines[len(lines)-1]), ";")
	if id == "" || strings.Trim(id, "0123456789") != "" {
		return "", &CommandError{Argv: []string{c.bin("sbatch")}, Message: fmt.Sprintf("unexpected output %q (want a job id)", out),
			Err: errors.New("no job id")}
	}
	return id, nil
}

// errUnknownJob is scontrol saying it knows no such job (never submitted,
// or purged MinJobAge after it ended).
var errUnknownJob = errors.New("unknown job")

// show returns the states of an array job's tasks, or errUnknownJob.
func (c client) show(ctx context.Context, arrayJobID string) ([]TaskState, error) {
	out, err := c.run(ctx, "scontrol", "show", "job", "-o", arrayJobID)
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) && strings.Contains(ce.Message, "Invalid job id") {
			return nil, errUnknownJob
		}
		return nil, err
	}
	return ParseShowJob(out, arrayJobID)
}

// cancel runs scancel on the given job or task ids.
func (c client) cancel(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := c.run(ctx, "scancel", ids...)
	return err
}
