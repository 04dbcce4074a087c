package aiperf

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockFile is what `make setup` installs with pip --require-hashes.
var lockFile = filepath.Join("..", "..", "scripts", "aiperf-requirements.txt")

var (
	pinLine  = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ \\;]+)( ;[^\\]*)? \\$`)
	hashLine = regexp.MustCompile(`^ {4}--hash=sha256:[0-9a-f]{64}( \\)?$`)
)

// checkLock returns the pins of a pip-compile --generate-hashes file, or
// an error naming the line where a requirement is not pinned with ==, has
// no sha256 hash, or appears twice. pip's --require-hashes refuses such a
// file too, but only at install time, on the machine that installs it.
func checkLock(text string) (map[string]string, error) {
	pins := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	n, current, hashes, currentLine := 0, "", 0, 0
	end := func() error {
		if current != "" && hashes == 0 {
			return fmt.Errorf("line %d: %s has no --hash=sha256", currentLine, current)
		}
		return nil
	}
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "    #"):
		case strings.HasPrefix(line, "    --hash"):
			if current == "" || !hashLine.MatchString(line) {
				return nil, fmt.Errorf("line %d: malformed hash line %q", n, line)
			}
			hashes++
		default:
			if err := end(); err != nil {
				return nil, err
			}
			m := pinLine.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("line %d: %q is not a hash-checked pin (name==version \\)", n, line)
			}
			name := strings.ToLower(m[1])
			if _, dup := pins[name]; dup {
				return nil, fmt.Errorf("line %d: %s pinned twice", n, name)
			}
			pins[name], current, hashes, currentLine = m[2], name, 0, n
		}
	}
	if err := end(); err != nil {
		return nil, err
	}
	return pins, sc.Err()
}

// TestLockPinsAIPerfWithHashes checks the shipped lock: aiperf at the
// required version, every package pinned to one version with hashes.
func TestLockPinsAIPerfWithHashes(t *testing.T) {
	data, err := os.ReadFile(lockFile)
	require.NoError(t, err)
	pins, err := checkLock(string(data))
	require.NoError(t, err)
	assert.Equal(t, "0.13.0", pins["aiperf"])
	assert.Greater(t, len(pins), 50, "the whole closure, not just aiperf")
	assert.Contains(t, string(data), "scripts/lock-aiperf.sh", "the file says how to regenerate it")
}

// TestCheckLockRejectsBrokenLocks breaks the lock on purpose.
func TestCheckLockRejectsBrokenLocks(t *testing.T) {
	h := "    --hash=sha256:" + strings.Repeat("a", 64)
	good := "aiperf==0.13.0 \\\n" + h + "\n    # via -r in\nnumpy==2.4.6 \\\n" + h + " \\\n" + h + "\n"
	_, err := checkLock(good)
	require.NoError(t, err)
	for name, tc := range map[string]struct{ text, want string }{
		"unpinned":       {"aiperf>=0.13.0 \\\n" + h + "\n", "line 1"},
		"no hash":        {"aiperf==0.13.0\nnumpy==2.4.6 \\\n" + h + "\n", "line 1"},
		"last no hash":   {"aiperf==0.13.0 \\\n" + h + "\nnumpy==2.4.6 \\\n", "line 3: numpy has no --hash"},
		"short hash":     {"aiperf==0.13.0 \\\n    --hash=sha256:abc\n", "line 2: malformed hash"},
		"md5 hash":       {"aiperf==0.13.0 \\\n    --hash=md5:" + strings.Repeat("a", 32) + "\n", "line 2"},
		"twice":          {good + "NumPy==2.4.5 \\\n" + h + "\n", "numpy pinned twice"},
		"url":            {"aiperf @ https://example.invalid/a.whl\n", "line 1"},
		"orphan hash":    {h + "\n", "line 1: malformed hash"},
		"editable":       {"-e .\n", "line 1"},
		"unpinned extra": {good + "requests\n", "line 7"},
	} {
		_, err := checkLock(tc.text)
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), tc.want, name)
		}
	}
}
