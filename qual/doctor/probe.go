package doctor

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/families/trtmc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Probe proves, on the node (a GPU node for TRTMC), the contract a run of
// the profile relies on before hours of engine loads (area "probe"):
//
//   - the family's server starts on the profile's bundle with the family's
//     own argv and answers ready;
//   - one request (the corpus's largest, the body AIPerf 0.13.0 posts: the
//     server's two size limits, --max-body-bytes and --max-prompt-bytes,
//     are proven with it, and a 413 names which refused it) with a chosen
//     X-Request-ID is answered 200, the id echoed
//     (records.py RequestPolicy idx@a9ed5f69; idx@ddf1735f ignores it), and
//     the answer extracts with the family's extractor and names the served
//     model;
//   - a record line with that id and the public fields is written
//     (request_id, route, status, handler_ms, and model_call_ms with
//     timing_scope public_task_call_wall), unless the family declares its
//     route unrecorded;
//   - the native worker starts and its ready event announces protocol >= 2
//     and the capability the family's native calls need.
//
// Each failure names its fix. The probe's scratch files go to a temporary
// directory that is removed.
func Probe(ctx context.Context, o Options, profileID string) []Check {
	var out []Check
	add := func(subject, status, detail, fix string) {
		out = append(out, Check{Area: "probe", Subject: profileID + ": " + subject, Status: status, Detail: detail, Fix: fix})
	}
	var p *inventory.Profile
	var g *inventory.Group
	for _, gn := range o.Inventory.GroupNames() {
		for _, cand := range o.Inventory.Groups[gn].Profiles {
			if cand.ID == profileID {
				p, g = cand, o.Inventory.Groups[gn]
			}
		}
	}
	if p == nil {
		add("profile", StatusFail, inventory.WithHint("no profile "+profileID+" in the inventory", profileID, o.Inventory.IDs()),
			"name a profile of the inventory (trtmc-qual inventory list)")
		return out
	}
	f := o.Families.Families[p.Family]
	if f == nil {
		add("family", StatusFail, "family "+p.Family+" is not configured", "select the family file that defines it")
		return out
	}
	dir, err := os.MkdirTemp("", "trtmc-qual-probe-*")
	if err != nil {
		add("scratch", StatusFail, err.Error(), "free space in the temporary directory")
		return out
	}
	defer os.RemoveAll(dir)
	probeServer(ctx, o, p, g, f, dir, add)
	probeWorker(ctx, o, p, f, add)
	return out
}

func probeServer(ctx context.Context, o Options, p *inventory.Profile, g *inventory.Group, f *families.Family, dir string,
	add func(subject, status, detail, fix string)) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		add("server", StatusFail, "no free port: "+err.Error(), "free a loopback port")
		return
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	corpus := inventory.ResolvePath(g.File, g.Workload.Dataset.Corpus)
	vars := qual.Vars{BinDir: o.BinDir, Self: o.Self, Families: o.Families, Profile: p, Family: f,
		Bundle: inventory.ResolvePath(p.File, p.Bundle.Path), Host: "127.0.0.1", Port: port, Dir: dir, Corpus: corpus,
		Seed: g.Workload.Seed}.Map()
	argv, err := families.Expand(f.Server, vars)
	if err != nil {
		add("server", StatusFail, err.Error(), "fix the family's server argv")
		return
	}
	url, err := families.Expand([]string{f.Readiness}, vars)
	if err != nil {
		add("server", StatusFail, err.Error(), "fix the family's readiness URL")
		return
	}
	logPath := filepath.Join(dir, "server.log")
	srv, closeLog, err := startProbeServer(ctx, o, f, argv, logPath)
	if err != nil {
		add("server", StatusFail, err.Error(), "put the family's server program on PATH, with space in the temporary directory")
		return
	}
	defer closeLog()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_, _ = srv.Stop()
		}
	}
	defer stop()
	if _, err := proc.WaitReady(ctx, srv, url[0], f.Timeouts.Startup.Or(20*time.Minute)); err != nil {
		add("server", StatusFail, fmt.Sprintf("%s did not become ready: %v; last log lines: %s", argv[0], err, oneLineTail(srv.StderrTail(), logPath)),
			"read the server's log above: a flag the server lacks (trtmc-server --help), the bundle, or the worker it starts (the native binary beside tensorrt_model_connect)")
		return
	}
	add("server", StatusOK, fmt.Sprintf("%s ready on 127.0.0.1:%d (%s)", argv[0], port, text.ShellJoin(argv)), "")

	body, what, err := largestRequest(g, p, corpus)
	if err != nil {
		add("request", StatusFail, err.Error(), "provide the group's corpus (trtmc-qual corpus init) and fix its entries")
		return
	}
	answer, id, ok := probeRequest(ctx, f, port, body, what, add)
	if !ok {
		return
	}
	probeAnswer(f, p, answer, add)
	stop() // the records are complete once the server is gone
	probeRecord(f, filepath.Join(dir, qual.RecordsFile), id, add)
}

// probeRequest posts the largest request of the corpus (what names it)
// to the ready server with an X-Request-ID of its own, and checks that it
// is answered 200 and its id echoed. ok is false when there is no answer
// to check further.
func probeRequest(ctx context.Context, f *families.Family, port int, body []byte, what string,
	add func(subject, status, detail, fix string)) (answer []byte, id string, ok bool) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	id = "trtmc-qual-probe-" + hex.EncodeToString(rnd[:])
	rctx, cancel := context.WithTimeout(ctx, f.Timeouts.AIPerf.Or(10*time.Minute))
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d%s", port, f.Route), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-ID", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		add("request", StatusFail, "POST "+f.Route+": "+err.Error(), "read the server's log")
		return nil, id, false
	}
	answer, _ = io.ReadAll(io.LimitReader(resp.Body, fileio.MaxAnswerBytes))
	resp.Body.Close()
	switch echo := resp.Header.Get("X-Request-ID"); {
	case resp.StatusCode != http.StatusOK:
		detail, fix := refusal(resp.StatusCode, answer)
		add("request", StatusFail, fmt.Sprintf("POST %s with %s answered %d%s: %s", f.Route, what, resp.StatusCode, detail, text.Clip(answer, 300)), fix)
		return answer, id, false
	case echo != id:
		add("request id", StatusFail, fmt.Sprintf("sent X-Request-ID %s, the server answered X-Request-ID %q: it does not honour the client's id, so no request can be joined by identity (the policy of idx@ddf1735f)", id, echo),
			"use a server that echoes X-Request-ID (apps/server/python/trtmc_server/records.py RequestPolicy, idx@a9ed5f69)")
	default:
		add("request", StatusOK, fmt.Sprintf("POST %s with %s answered 200", f.Route, what), "")
		add("request id", StatusOK, "X-Request-ID "+id+" echoed", "")
	}
	return answer, id, true
}

// startProbeServer starts the family's server with its environment, its
// output to logPath.
func startProbeServer(ctx context.Context, o Options, f *families.Family, argv []string, logPath string) (proc.Process, func(), error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	// The server's temporary files stay in the probe's private directory
	// (removed when the probe ends), as a run's children's do.
	tmp := filepath.Join(filepath.Dir(logPath), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		logFile.Close()
		return nil, nil, err
	}
	env := qual.TempEnv(tmp)
	for _, k := range slices.Sorted(maps.Keys(f.Env)) {
		env = append(env, k+"="+f.Env[k])
	}
	srv, err := o.Runner.Start(ctx, proc.Spec{Name: "server", Argv: argv, Env: env, Stdout: logFile, Stderr: logFile, Grace: 10 * time.Second})
	if err != nil {
		logFile.Close()
		return nil, nil, fmt.Errorf("could not start %s: %w", text.ShellJoin(argv), err)
	}
	return srv, func() { logFile.Close() }, nil
}

// largestRequest is the body AIPerf 0.13.0 posts for the corpus's
// largest request, whatever the family declares (the server's answer to
// it is the proof of both size limits), and how to name it.
func largestRequest(g *inventory.Group, p *inventory.Profile, corpus string) ([]byte, string, error) {
	entries, err := aiperf.LoadCorpus(corpus)
	if err == nil && len(entries) == 0 {
		err = fmt.Errorf("%s holds no entry", corpus)
	}
	if err != nil {
		return nil, "", fmt.Errorf("no corpus entry to send: %w", err)
	}
	sizes, err := qual.CheckRequestLimits(&families.Family{}, g.Workload.EndpointType, entries, p.Served(), g.Workload.Generation)
	if err != nil {
		return nil, "", err
	}
	body, err := aiperf.RequestBody(g.Workload.EndpointType, sizes.Largest, p.Served(), g.Workload.Generation)
	if err != nil {
		return nil, "", err
	}
	return body, fmt.Sprintf("entry %s, the corpus's largest request (%d bytes, prompt %d bytes)", sizes.Largest.ID, len(body), qual.PromptBytes(sizes.Largest)), nil
}

// probeAnswer checks the probe's answer with the family's extractor:
// complete, meaningful, naming the served model.
func probeAnswer(f *families.Family, p *inventory.Profile, answer []byte, add func(subject, status, detail, fix string)) {
	ex, ok := families.DefaultRegistry().Extractors[f.Extractor]
	if !ok {
		return
	}
	a, err := ex.FromHTTP(answer)
	switch {
	case err != nil:
		add("answer", StatusFail, "the answer does not extract with "+f.Extractor+": "+err.Error(), "check the family's extractor against the server's answers")
	case ex.NotMeaningful(a, &f.Semantics) != "":
		add("answer", StatusFail, "the answer is not complete and meaningful: "+ex.NotMeaningful(a, &f.Semantics), "check the bundle and the family's answer semantics")
	case a.NamesModel && a.Model != p.Served():
		add("answer", StatusFail, fmt.Sprintf("the answer names model %q, not the served --model-name %q", a.Model, p.Served()), "serve the profile's model under its name")
	default:
		add("answer", StatusOK, "extracts with "+f.Extractor+", complete and meaningful", "")
	}
}

func probeRecord(f *families.Family, path, id string, add func(subject, status, detail, fix string)) {
	if !f.Recorded() {
		add("record", StatusOK, "the family declares "+f.Route+" unrecorded (server_records: none); none required", "")
		return
	}
	fh, err := os.Open(path)
	if err != nil {
		add("record", StatusFail, "the server wrote no request records: "+err.Error(),
			"pass --records {records} to a server version that has it (cli.py idx@a9ed5f69)")
		return
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 64<<10), fileio.MaxAnswerBytes)
	for sc.Scan() {
		var rec map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		var rid string
		_ = json.Unmarshal(rec["request_id"], &rid)
		if rid != id {
			continue
		}
		var missing []string
		for _, k := range []string{"request_id", "route", "status", "handler_ms"} {
			if _, ok := rec[k]; !ok {
				missing = append(missing, k)
			}
		}
		if f.TaskTimeSource() == verdict.TaskTimeServer {
			_, hasTask := rec["task_ms"]
			_, hasCall := rec["model_call_ms"]
			var scope string
			_ = json.Unmarshal(rec["timing_scope"], &scope)
			switch {
			case hasTask:
			case !hasCall:
				missing = append(missing, "model_call_ms")
			case scope != trtmc.ScopeTaskCall:
				add("record", StatusFail, fmt.Sprintf("the record's model_call_ms has timing_scope %q, not %s: it does not time the public Task call (a protocol-1 worker answers none)", scope, trtmc.ScopeTaskCall),
					"use a protocol-2 native worker (apps/server/native_worker.cpp idx@0772b486), or take Task time from the native answers (task_time: native)")
				return
			}
		}
		if len(missing) > 0 {
			add("record", StatusFail, "the record of "+id+" lacks "+strings.Join(missing, ", "), "use a server whose records have the public fields (records.py idx@a9ed5f69)")
			return
		}
		add("record", StatusOK, "a record of "+id+" with the public fields", "")
		return
	}
	add("record", StatusFail, "no record of "+id+" in the server's records (it recorded the request under another id, or not at all)",
		"use a server that echoes X-Request-ID and records "+f.Route)
}

func probeWorker(ctx context.Context, o Options, p *inventory.Profile, f *families.Family, add func(subject, status, detail, fix string)) {
	if len(f.Native) < 3 || f.Native[1] != "adapter" || f.Native[2] != "native" || argAfter(f.Native, "--path", trtmc.PathWorker) != trtmc.PathWorker {
		return
	}
	w, err := trtmc.LocateWorker(ctx, o.locate())
	if err != nil {
		add("worker", StatusFail, err.Error(), "install TRTMC from its checkout (pip install '.[serve]') or set TRTMC_WORKER_BINARY")
		return
	}
	want, _ := strconv.Atoi(argAfter(f.Native, "--worker-protocol", "2"))
	capability := argAfter(f.Native, "--worker-capability", "")
	bundle := inventory.ResolvePath(p.File, p.Bundle.Path)
	var stderr bytes.Buffer
	wk, err := trtmc.StartWorker(ctx, o.Runner, trtmc.WorkerSpec{Argv: trtmc.WorkerArgv(w, bundle, nil), StartupTimeout: f.Timeouts.Startup.Or(20 * time.Minute),
		RequestTimeout: time.Minute, Stderr: &stderr})
	if err != nil {
		add("worker", StatusFail, w.Path+": "+err.Error(), "read the worker's last lines above: the bundle, the runtime root, or the GPU")
		return
	}
	defer wk.Close(context.WithoutCancel(ctx))
	rd := wk.Ready
	switch {
	case rd.ProtocolVersion < 2:
		add("worker", StatusFail, fmt.Sprintf("%s announces protocol_version %d: protocol 1 (idx@ddf1735f) has no model_call_ms or timing_scope", w.Path, rd.ProtocolVersion),
			"install a TRTMC whose native worker speaks protocol 2 (apps/server/native_worker.cpp idx@0772b486)")
	case want != 0 && rd.ProtocolVersion != want:
		add("worker", StatusFail, fmt.Sprintf("%s announces protocol_version %d, the family is configured for %d", w.Path, rd.ProtocolVersion, want),
			"set --worker-protocol in the family's native argv to the worker's version once its protocol is known to the adapter")
	case capability != "" && !containsStr(rd.Capabilities, capability):
		add("worker", StatusFail, fmt.Sprintf("%s announces capabilities %v, not %q, which the family's native calls need", w.Path, rd.Capabilities, capability),
			"use a worker with that capability, or the CLI path (--path cli) for this family")
	default:
		add("worker", StatusOK, fmt.Sprintf("%s ready: protocol_version %d, capabilities %v", w.Path, rd.ProtocolVersion, rd.Capabilities), "")
	}
}

// refusal reads a refused probe request's answer (trtmc-server's error
// envelope, app.py idx@a9ed5f69): what refused it, and the fix.
func refusal(status int, answer []byte) (detail, fix string) {
	var env struct {
		Error struct {
			Message, Type string
			Code          any
		} `json:"error"`
	}
	_ = json.Unmarshal(answer, &env)
	code, _ := env.Error.Code.(string)
	meaning := verdict.ServerErrorMeaning(status, env.Error.Type, code, env.Error.Message)
	if meaning != "" {
		detail = " (" + meaning + ")"
	}
	switch {
	case code == "content_too_large" && strings.Contains(env.Error.Message, verdict.MsgPromptTooLarge):
		return detail, "raise the family's max_prompt_bytes (passed as --max-prompt-bytes): this server counts more than the question into the prompt, or the question is too long"
	case code == "content_too_large":
		return detail, "raise the family's max_body_bytes (passed as --max-body-bytes) or use smaller images"
	case code == "max_tokens_exceeded":
		return detail, "lower the workload's max_tokens to the server's --max-new-tokens, or pass a higher --max-new-tokens in the family's server argv"
	case code == "server_busy":
		return detail, "nothing else may send requests to this node's server while the probe runs: stop the other client"
	}
	return detail, "read the server's log"
}

func oneLineTail(tail, logPath string) string {
	t := strings.TrimSpace(tail)
	if t == "" {
		data, _ := os.ReadFile(logPath)
		t = strings.TrimSpace(string(data))
	}
	lines := strings.Split(t, "\n")
	if len(lines) > 4 {
		lines = lines[len(lines)-4:]
	}
	return strings.Join(lines, " | ")
}
