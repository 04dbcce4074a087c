package slurm

import (
	"context"
	"fmt"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// GPUSelectionSlurm is the `--gpus` value a task runs with: the GPUs Slurm
// allocated to the job (see GPUSelection).
const GPUSelectionSlurm = "slurm"

// TaskFromEnv is the Slurm task this process runs in, from the environment
// Slurm gives a batch job; nil outside Slurm.
func TaskFromEnv(getenv func(string) string) *verdict.SlurmTask {
	job := getenv("SLURM_JOB_ID")
	if job == "" {
		return nil
	}
	t := &verdict.SlurmTask{JobID: job, Cluster: getenv("SLURM_CLUSTER_NAME"), Partition: getenv("SLURM_JOB_PARTITION"),
		Node: getenv("SLURMD_NODENAME"), GPUs: getenv("SLURM_JOB_GPUS"), CUDAVisibleDevices: getenv("CUDA_VISIBLE_DEVICES"),
		Submission: getenv(SubmissionEnv)}
	if a, i := getenv("SLURM_ARRAY_JOB_ID"), getenv("SLURM_ARRAY_TASK_ID"); a != "" && i != "" {
		t.ArrayJobID, t.ArrayTaskID, t.JobID = a, i, a+"_"+i
	}
	return t
}

// GPUSelection resolves `--gpus slurm` inside a Slurm job into a selection
// qual.NewPool understands: the GPUs Slurm allocated to the job, and nothing
// else on the node. Slurm names them in SLURM_JOB_GPUS by node-wide index.
// When nvidia-smi lists exactly as many GPUs as were allocated, the node
// confines jobs to their devices (ConstrainDevices) and the listed ones are
// the allocation; when it lists more, the allocated indexes are selected
// from them. No GPU allocated (gpu_request none), or no nvidia-smi on the
// node, runs on one CPU slot, as a local run without GPUs does; note says
// why.
func GPUSelection(ctx context.Context, probe qual.GPUProbe, getenv func(string) string) (sel, note string, err error) {
	if getenv("SLURM_JOB_ID") == "" {
		return "", "", fmt.Errorf("--gpus %s: not inside a Slurm job (no SLURM_JOB_ID)", GPUSelectionSlurm)
	}
	alloc := getenv("SLURM_JOB_GPUS")
	if alloc == "" {
		alloc = getenv("GPU_DEVICE_ORDINAL")
	}
	if alloc == "" {
		return "cpu", "Slurm allocated no GPU to this job: running on CPU", nil
	}
	want := strings.Split(alloc, ",")
	gpus, err := probe.List(ctx)
	if err != nil {
		return "", "", err
	}
	if len(gpus) == 0 {
		return "cpu", fmt.Sprintf("Slurm allocated GPU(s) %s but this node lists none (no nvidia-smi): running on CPU", alloc), nil
	}
	if len(gpus) == len(want) {
		idx := make([]string, len(gpus))
		for i, g := range gpus {
			idx[i] = g.Index
		}
		return strings.Join(idx, ","), "", nil
	}
	return alloc, "", nil
}

// GPUsNeeded is the number of GPUs a profile's parallelism needs (tp × cp):
// the slot scheduler's own count, qual.GPUsNeeded.
func GPUsNeeded(p *inventory.Profile) int { return qual.GPUsNeeded(p) }
