package qual

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// Temporary files of children stay in the run. Every child of a run —
// the server, the correctness case, AIPerf (and its services), the native
// runner, the prepare commands, `aiperf --version` and `pip freeze` —
// gets a temporary directory inside the run's own private directory
// (fileio.PrivateDir: mode 0700 in the system's temporary directory,
// named after the harness's process), one per checkpoint, removed when
// the checkpoint ends; the run's directory is removed when the run ends,
// and one a killed run left is removed by the next run (RemoveStale).
// Nothing of a child's (AIPerf's memory-mapped copy of the corpus above
// all) is left in the shared temporary directory, or readable by others
// while it runs.

// runTempPrefix names a run's private temporary directory. It is short:
// AIPerf puts its ZeroMQ sockets in the temporary directory
// (TMPDIR/tmpXXXXXXXX/aiperf/NAME.ipc), and a socket's path may not be
// longer than 107 bytes.
const runTempPrefix = "tq-run-"

// maxRunTempLen is the longest path of the run's temporary directory with
// which AIPerf's longest socket path still fits in 107 bytes: the
// checkpoint's directory adds /NNNN (5), AIPerf /tmpXXXXXXXX/aiperf/ (20)
// and dataset_manager_proxy_frontend.ipc (35, AIPerf 0.13.0's longest).
const maxRunTempLen = 107 - 5 - 20 - 35

// runTemp removes what killed runs left and makes this run's private
// temporary directory. A temporary directory whose path is too long for
// AIPerf's sockets is refused before anything runs.
func runTemp() (string, error) {
	fileio.RemoveStale("", runTempPrefix)
	dir, err := fileio.PrivateDir("", runTempPrefix)
	if err != nil {
		return "", &SetupError{fmt.Errorf("the run's temporary directory: %w", err)}
	}
	if len(dir) > maxRunTempLen {
		os.RemoveAll(dir)
		return "", &SetupError{fmt.Errorf("the run's temporary directory %s is %d bytes long, more than the %d AIPerf's sockets leave (a socket path may not exceed 107 bytes): set TMPDIR to a shorter directory", dir, len(dir), maxRunTempLen)}
	}
	return dir, nil
}

// TempEnv points a child's temporary files into dir ("" adds nothing):
// TMPDIR (and TMP, TEMP, which some programs read instead), and AIPerf
// 0.13.0's memory-mapped dataset — AIPERF_DATASET_MMAP_BASE_PATH, where it
// writes aiperf_mmap_<benchmark id>/ (dataset.dat holds the whole corpus;
// by default in the system's temporary directory, left behind), and
// AIPERF_DATASET_MMAP_CACHE_DIR, its cache of those files (by default
// under ~/.cache/aiperf), as aiperf/common/environment.py of the installed
// AIPerf 0.13.0 names them (_DatasetSettings, prefix AIPERF_DATASET_).
func TempEnv(dir string) []string {
	if dir == "" {
		return nil
	}
	return []string{"TMPDIR=" + dir, "TMP=" + dir, "TEMP=" + dir,
		"AIPERF_DATASET_MMAP_BASE_PATH=" + dir,
		"AIPERF_DATASET_MMAP_CACHE_DIR=" + filepath.Join(dir, "aiperf-mmap-cache")}
}

// makeTemp makes the checkpoint's children's temporary directory inside
// the run's.
func (cr *checkpointRun) makeTemp() error {
	if cr.gr.tmp == "" {
		return nil // a test's group run without one
	}
	cr.tmp = filepath.Join(cr.gr.tmp, strconv.FormatInt(cr.gr.tmpSeq.Add(1), 10)) // short: see maxRunTempLen
	if err := os.Mkdir(cr.tmp, 0o700); err != nil {
		return fmt.Errorf("the checkpoint's temporary directory: %w", err)
	}
	return nil
}
