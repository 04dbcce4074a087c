package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Faults are the failures the server injects for the harness's reliability
// tests. The zero value injects none.
type Faults struct {
	StartupFail      bool          // log an error and exit 1 before binding
	StartupDelay     time.Duration // sleep before binding
	NeverReady       bool          // /health/ready always 503, no server_ready line
	Crash            bool          // exit when inference request CrashAfter+1 arrives
	CrashAfter       int
	Hang             bool // the Task never returns for requests after HangAfter
	HangAfter        int
	SlowMs           int  // added to every Task call
	HTTP500Every     int  // every Nth inference request answers 500
	WrongAnswerEvery int  // every Nth inference request's HTTP answer is corrupted
	DropRecordEvery  int  // every Nth inference request writes no record
	IgnoreSIGTERM    bool // SIGTERM and SIGINT are ignored
	// NoEchoEvery and WrongEchoEvery: every Nth inference request's answer
	// carries no X-Request-ID header, or another id than the one it served
	// (its record keeps the right one), as a proxy or a server that ignores
	// the header would answer.
	NoEchoEvery    int
	WrongEchoEvery int
}

// FaultNames lists the fault names ParseFaults accepts.
func FaultNames() []string {
	return []string{"startup-fail", "startup-delay=SECONDS", "never-ready", "crash-after=N", "hang-after=N",
		"slow-ms=N", "http-500-every=N", "wrong-answer-every=N", "drop-record-every=N", "no-echo-every=N", "wrong-echo-every=N", "ignore-sigterm"}
}

// ParseFaults parses comma-separated fault specs; several specs (from the flag
// and the environment) are combined. Empty items are ignored.
func ParseFaults(specs ...string) (Faults, error) {
	var f Faults
	for _, spec := range specs {
		for item := range strings.SplitSeq(spec, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			if err := f.set(item); err != nil {
				return Faults{}, fmt.Errorf("fault %q: %w (valid faults are %s)", item, err, strings.Join(FaultNames(), ", "))
			}
		}
	}
	return f, nil
}

func (f *Faults) set(item string) error {
	name, value, hasValue := strings.Cut(item, "=")
	flag := func(dst *bool) error {
		if hasValue {
			return fmt.Errorf("%s takes no value", name)
		}
		*dst = true
		return nil
	}
	count := func(dst *int, minimum int) error {
		if !hasValue {
			return fmt.Errorf("%s needs a value", name)
		}
		n, err := strconv.Atoi(value)
		if err != nil || n < minimum {
			return fmt.Errorf("%s needs an integer of at least %d", name, minimum)
		}
		*dst = n
		return nil
	}
	switch name {
	case "startup-fail":
		return flag(&f.StartupFail)
	case "never-ready":
		return flag(&f.NeverReady)
	case "ignore-sigterm":
		return flag(&f.IgnoreSIGTERM)
	case "startup-delay":
		if !hasValue {
			return fmt.Errorf("%s needs a value", name)
		}
		s, err := strconv.ParseFloat(value, 64)
		if err != nil || s < 0 || math.IsInf(s, 0) || math.IsNaN(s) || s > 3600 {
			return fmt.Errorf("%s needs a number of seconds between 0 and 3600", name)
		}
		f.StartupDelay = time.Duration(s * float64(time.Second))
		return nil
	case "crash-after":
		f.Crash = true
		return count(&f.CrashAfter, 0)
	case "hang-after":
		f.Hang = true
		return count(&f.HangAfter, 0)
	case "slow-ms":
		return count(&f.SlowMs, 0)
	case "http-500-every":
		return count(&f.HTTP500Every, 1)
	case "wrong-answer-every":
		return count(&f.WrongAnswerEvery, 1)
	case "drop-record-every":
		return count(&f.DropRecordEvery, 1)
	case "no-echo-every":
		return count(&f.NoEchoEvery, 1)
	case "wrong-echo-every":
		return count(&f.WrongEchoEvery, 1)
	}
	return fmt.Errorf("unknown fault %q", name)
}

// every reports whether the seq-th request (1-based) is hit by an every-N fault.
func every(n int, seq int64) bool { return n > 0 && seq%int64(n) == 0 }
