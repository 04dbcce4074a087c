package proc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ReadyPollInterval is how often WaitReady probes; small, so readiness is
// noticed within a few milliseconds of the server becoming ready.
const ReadyPollInterval = 10 * time.Millisecond

// NotReadyError says the deadline passed while the child was still running
// but never answered 200 on its readiness URL.
type NotReadyError struct {
	URL        string
	Waited     time.Duration
	LastStatus string
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("not ready after %s (GET %s: %s)", e.Waited.Round(time.Millisecond), e.URL, e.LastStatus)
}

// WaitReady polls url until it answers 200, the child exits, or timeout
// passes. If the child exits first, the error is the child's own exit
// (*ExitError with its stderr tail), not "connection refused".
func WaitReady(ctx context.Context, p Process, url string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	last := "no answer yet"
	tick := time.NewTicker(ReadyPollInterval)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, fmt.Errorf("readiness url %q: %w", url, err)
		}
		resp, err := client.Do(req)
		if err == nil {
			// A server that answers but is not ready says why in its body
			// (trtmc-server: 503 {"status":"not_ready","degraded":...},
			// app.py idx@a9ed5f69): keep it.
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
			last = resp.Status
			if b := strings.TrimSpace(string(body)); b != "" {
				last += " " + strings.Join(strings.Fields(b), " ")
			}
		} else if ctx.Err() == nil {
			// A probe cut short by our own deadline says nothing about the
			// server; keep what the last complete probe saw (e.g. 503).
			last = err.Error()
		}
		select {
		case <-p.Done():
			res, werr := p.Wait()
			if werr == nil {
				werr = fmt.Errorf("exited with status %d before it was ready", res.ExitCode)
			}
			return 0, fmt.Errorf("server exited during startup: %w", werr)
		case <-ctx.Done():
			if parentErr := context.Cause(ctx); parentErr != nil && ctx.Err() != context.DeadlineExceeded {
				return 0, parentErr
			}
			return 0, &NotReadyError{URL: url, Waited: time.Since(start), LastStatus: last}
		case <-tick.C:
		}
	}
}
