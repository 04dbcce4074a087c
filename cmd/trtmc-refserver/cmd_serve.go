package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/server"
)

// Environment variables serve reads.
const (
	envAPIKey = "TRTMC_SERVE_TOKEN"
	envFault  = "TRTMC_REFSERVER_FAULT"
)

type serveOptions struct {
	Bundle           string
	ModelName        string
	Host             string
	Port             int
	Records          string
	QueueSize        int
	ShutdownGraceMs  int
	MaxBodyBytes     int64
	APIKey           string
	Fault            string
	AllowNonLoopback bool
}

func newServeCmd(d deps) *cobra.Command {
	var opts serveOptions
	cmd := &cobra.Command{
		Use:   "serve BUNDLE --model-name NAME --records FILE [--host 127.0.0.1] [--port 8000]",
		Short: "Serve the bundle's Task over HTTP, like trtmc-server",
		Long: `Serve the bundle's Task over HTTP on a loopback address, like trtmc-server:
one worker, a bounded queue (429 when full), strict request validation,
X-Request-ID handling and one request record per inference request in --records.
Startup is synchronous; readiness is logged as a JSON line with event
"server_ready" on stderr. SIGINT/SIGTERM fail readiness, drain queued work until
--shutdown-grace-ms, and exit 0.

Routes: GET /health/live, GET /health/ready, GET /v1/models, GET /metrics, and
POST /v1/chat/completions (ref-vlm) or POST /v1/infer (ref-detect).

Faults (--fault or ` + envFault + `, comma-separated): startup-fail,
startup-delay=SECONDS, never-ready, crash-after=N, hang-after=N, slow-ms=N,
http-500-every=N, wrong-answer-every=N, drop-record-every=N, ignore-sigterm.`,
		// serve reports even usage errors as JSON log lines: its stderr is a log.
		Args: func(cmd *cobra.Command, args []string) error {
			return logged(d, exactArgs(1, "BUNDLE")(cmd, args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Bundle = args[0]
			return runServe(cmd.Context(), d, opts)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return logged(d, usageErr("%w", err)) })
	f := cmd.Flags()
	f.StringVar(&opts.ModelName, "model-name", "", "model name served and reported by /v1/models")
	f.StringVar(&opts.Host, "host", "127.0.0.1", "address to bind; must be loopback unless --allow-non-loopback")
	f.IntVar(&opts.Port, "port", 8000, "port to bind; 0 picks a free port (logged in server_ready)")
	f.StringVar(&opts.Records, "records", "", "request records file (JSONL, appended)")
	f.IntVar(&opts.QueueSize, "queue-size", server.DefaultQueueSize, "requests that may wait for the worker before 429")
	f.IntVar(&opts.ShutdownGraceMs, "shutdown-grace-ms", int(server.DefaultShutdownGrace.Milliseconds()), "time to drain queued work after SIGINT/SIGTERM")
	f.Int64Var(&opts.MaxBodyBytes, "max-body-bytes", server.DefaultMaxBodyBytes, "largest request body; larger ones get 413")
	f.StringVar(&opts.APIKey, "api-key", "", "bearer token required on inference routes (default $"+envAPIKey+")")
	f.StringVar(&opts.Fault, "fault", "", "faults to inject, comma-separated (also $"+envFault+")")
	f.BoolVar(&opts.AllowNonLoopback, "allow-non-loopback", false, "allow binding a non-loopback --host")
	return cmd
}

// config resolves the options, the environment and the bundle into a server
// configuration. Flags win over the environment; faults from both combine.
func (o serveOptions) config(d deps) (server.Config, error) {
	faults, err := server.ParseFaults(o.Fault, d.Getenv(envFault))
	if err != nil {
		return server.Config{}, usageErr("serve: %w", err)
	}
	apiKey := o.APIKey
	if apiKey == "" {
		apiKey = d.Getenv(envAPIKey)
	}
	cfg := server.Config{
		ModelName:        o.ModelName,
		Host:             o.Host,
		Port:             o.Port,
		AllowNonLoopback: o.AllowNonLoopback,
		RecordsPath:      o.Records,
		QueueSize:        o.QueueSize,
		ShutdownGrace:    time.Duration(o.ShutdownGraceMs) * time.Millisecond,
		MaxBodyBytes:     o.MaxBodyBytes,
		APIKey:           apiKey,
		Faults:           faults,
		Log:              server.NewLogger(d.ErrOut),
		Exit:             d.Exit,
		Version:          version,
	}
	b, err := bundle.Load(o.Bundle)
	if err != nil {
		return cfg, usageErr("serve: %w", err)
	}
	cfg.Bundle = b
	if err := cfg.Validate(); err != nil {
		return cfg, usageErr("serve: %w", err)
	}
	return cfg, nil
}

// logged logs a usage error as a JSON startup_failed line and marks it as
// reported.
func logged(d deps, err error) error {
	if err == nil {
		return nil
	}
	server.NewLogger(d.ErrOut).Error("startup_failed", "error", err.Error())
	return &exitError{code: exitUsage, err: err, logged: true}
}

func runServe(ctx context.Context, d deps, opts serveOptions) error {
	log := server.NewLogger(d.ErrOut)
	cfg, err := opts.config(d)
	if err != nil {
		return logged(d, err)
	}
	if cfg.Faults.IgnoreSIGTERM {
		d.IgnoreSignals(syscall.SIGTERM, syscall.SIGINT)
		ctx = context.WithoutCancel(ctx)
		log.Warn("ignoring_signals", "fault", "ignore-sigterm", "signals", "SIGTERM,SIGINT")
	}
	log.Info("server_starting", "bundle", opts.Bundle, "bundle_sha256", cfg.Bundle.SHA256,
		"family", cfg.Bundle.Family, "model", cfg.ModelName, "host", cfg.Host, "port", cfg.Port)
	if err := server.Run(ctx, cfg); err != nil {
		code := exitFailed
		if errors.Is(err, context.Canceled) {
			code = exitInterrupted
		}
		log.Error("startup_failed", "error", err.Error())
		return &exitError{code: code, err: fmt.Errorf("serve: %w", err), logged: true}
	}
	log.Info("server_stopped")
	return nil
}
