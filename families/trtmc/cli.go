package trtmc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// CLISpec runs one `trtmc run` / `trtmc detect` process per request: the
// bundle loads on every call, so this is the fallback where no persistent
// worker serves the family.
type CLISpec struct {
	// Trtmc is the trtmc executable.
	Trtmc string
	// Extra arguments after the bundle (e.g. --runtime-root D,
	// --backend-dir D, --model-plugin-dir D).
	Extra   []string
	Env     []string
	Timeout time.Duration
	Stderr  io.Writer
	// TempDir receives each request's decoded image.
	TempDir string
}

// timingRE matches `[trtmc.timing] prefill_ms=… decode_ms=… total_ms=…`
// (src/cli/main.cpp print_text_timing).
var timingRE = regexp.MustCompile(`\[trtmc\.timing\] prefill_ms=(\S+) decode_ms=(\S+) total_ms=(\S+)`)

// CLIRunResult is one `trtmc run` answer.
type CLIRunResult struct {
	Text string
	// TotalMS is prefill + decode of the one call (nil: no timing line).
	TotalMS *float64
}

// RunChat runs `trtmc run BUNDLE --prompt P --image F ...` with the call's
// controls mapped to the CLI's flags (src/cli/args.cpp). The CLI has no
// system prompt; a call with one is refused rather than changed.
func (c CLISpec) RunChat(ctx context.Context, r proc.Runner, bundle, id string, call ChatCall) (CLIRunResult, error) {
	if call.SystemPrompt != "" {
		return CLIRunResult{}, &ReplyError{Type: "unsupported", Message: "trtmc run has no system prompt option; use the worker protocol for this request"}
	}
	img, err := c.writeImage(id, call.Image)
	if err != nil {
		return CLIRunResult{}, err
	}
	defer os.Remove(img)
	argv := []string{c.Trtmc, "run", bundle, "--prompt", call.Prompt, "--image", img}
	argv = append(argv, chatFlags(call.Config)...)
	argv = append(argv, c.Extra...)
	var stdout, stderr bytes.Buffer
	if err := c.run(ctx, r, argv, &stdout, &stderr); err != nil {
		return CLIRunResult{}, err
	}
	out := stdout.String()
	if !strings.HasSuffix(out, "\n") {
		return CLIRunResult{}, fmt.Errorf("trtmc run printed %q: no complete answer line", text.Clip(out, 200))
	}
	res := CLIRunResult{Text: strings.TrimSuffix(out, "\n")}
	switch m := timingRE.FindAllStringSubmatch(stderr.String(), -1); len(m) {
	case 0: // no timing line: no Task time (the row withholds it)
	case 1:
		total, err := runTiming(m[0][1], m[0][2], m[0][3])
		if err != nil {
			return CLIRunResult{}, err
		}
		res.TotalMS = &total
	default:
		return CLIRunResult{}, &ReplyError{Type: TimingError, Message: fmt.Sprintf("trtmc run printed %d [trtmc.timing] lines for one call", len(m))}
	}
	return res, nil
}

// runTiming reads `[trtmc.timing] prefill_ms=P decode_ms=D total_ms=T`
// in its domain: three finite, non-negative numbers with T = P + D
// (src/cli/main.cpp print_text_timing prints the sum with six decimals).
// A total its parts contradict is an error, never a Task time.
func runTiming(prefill, decode, total string) (float64, error) {
	var v [3]float64
	for i, s := range []string{prefill, decode, total} {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return 0, &ReplyError{Type: TimingError, Message: fmt.Sprintf("trtmc run's [trtmc.timing] %s=%s is not a time (negative or not finite)",
				[]string{"prefill_ms", "decode_ms", "total_ms"}[i], s)}
		}
		v[i] = f
	}
	if sum := v[0] + v[1]; math.Abs(v[2]-sum) > 1e-3+1e-6*sum {
		return 0, &ReplyError{Type: TimingError, Message: fmt.Sprintf("trtmc run's [trtmc.timing] total_ms=%s contradicts prefill_ms=%s + decode_ms=%s (= %g)",
			total, prefill, decode, sum)}
	}
	return v[2], nil
}

// chatFlags maps a generation config to `trtmc run` flags. Keys it cannot
// express are refused by the caller's config (there are none today).
func chatFlags(cfg map[string]any) []string {
	var out []string
	num := func(v any) string {
		switch x := v.(type) {
		case int64:
			return strconv.FormatInt(x, 10)
		case float64:
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return fmt.Sprint(v)
	}
	for _, k := range []struct{ key, flag string }{
		{"max_new_tokens", "--max-new-tokens"}, {"temperature", "--temperature"}, {"top_p", "--top-p"},
		{"min_p", "--min-p"}, {"top_k", "--top-k"}, {"seed", "--seed"},
	} {
		if v, ok := cfg[k.key]; ok {
			out = append(out, k.flag, num(v))
		}
	}
	if b, ok := cfg["use_chat_template"].(bool); ok && b {
		out = append(out, "--chat-template")
	}
	if b, ok := cfg["enable_thinking"].(bool); ok && !b {
		out = append(out, "--no-thinking")
	}
	return out
}

// RunDetect runs `trtmc detect BUNDLE --image F --output-json OUT
// [--score-threshold T] ...` and reads its detections.
func (c CLISpec) RunDetect(ctx context.Context, r proc.Runner, bundle, id string, im Image, threshold *float64) (Detections, error) {
	img, err := c.writeImage(id, im)
	if err != nil {
		return Detections{}, err
	}
	defer os.Remove(img)
	out := img + ".detections.json"
	defer os.Remove(out)
	argv := []string{c.Trtmc, "detect", bundle, "--image", img, "--output-json", out}
	if threshold != nil {
		argv = append(argv, "--score-threshold", strconv.FormatFloat(*threshold, 'g', -1, 64))
	}
	argv = append(argv, c.Extra...)
	var stdout, stderr bytes.Buffer
	if err := c.run(ctx, r, argv, &stdout, &stderr); err != nil {
		return Detections{}, err
	}
	data, err := fileio.ReadFile(ctx, out, fileio.MaxDocumentBytes)
	if err != nil {
		return Detections{}, fmt.Errorf("trtmc detect wrote no usable --output-json file: %w", err)
	}
	return parseDetections(data)
}

func parseDetections(data []byte) (Detections, error) {
	var d Detections
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		return Detections{}, fmt.Errorf("detections are not {scores, classes, boxes}: %w", err)
	}
	if d.Scores == nil || d.Classes == nil || d.Boxes == nil {
		return Detections{}, errors.New("detections lack scores, classes or boxes")
	}
	return d, nil
}

func (c CLISpec) writeImage(id string, im Image) (string, error) {
	f, err := os.CreateTemp(c.TempDir, "req-*"+im.Ext())
	if err != nil {
		return "", err
	}
	if _, err := f.Write(im.Data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	_ = id
	return filepath.Clean(f.Name()), nil
}

func (c CLISpec) run(ctx context.Context, r proc.Runner, argv []string, stdout, stderr *bytes.Buffer) error {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	errW := io.Writer(stderr)
	if c.Stderr != nil {
		errW = io.MultiWriter(stderr, c.Stderr)
	}
	_, err := r.Run(ctx, proc.Spec{Name: filepath.Base(argv[0]) + " " + argv[1], Argv: argv, Env: c.Env, Stdout: stdout, Stderr: errW})
	if ctx.Err() == context.DeadlineExceeded {
		return &ReplyError{Type: "timeout", Message: fmt.Sprintf("%s %s did not finish within %s", argv[0], argv[1], c.Timeout)}
	}
	if err != nil {
		return err
	}
	return ctx.Err()
}
