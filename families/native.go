package families

import "encoding/json"

// The native-side file formats between the harness and a family's native
// command, each declared once here: the harness (qual) writes
// native_requests.jsonl and reads native_meta.json, the join
// (qual/streamjoin) reads native_answers.jsonl, and families/trtmc's
// `adapter native` reads the first and writes the other two. The JSON
// Schemas in schemas/ (native-requests, native-answers, native-meta) are
// derived from these types.

// NativeRequest is one line of native_requests.jsonl, a native runner's
// input: the exact JSON body the harness posted to the family's route.
type NativeRequest struct {
	RequestID string          `json:"request_id"`
	Route     string          `json:"route"`
	Payload   json.RawMessage `json:"payload"`
}

// NativeAnswer is one line of native_answers.jsonl: a request's answer, in
// the form the family's extractor compares, or the error that replaced it,
// and the Task's time (null when the native path has no timing).
type NativeAnswer struct {
	RequestID string          `json:"request_id"`
	Answer    json.RawMessage `json:"answer,omitempty"`
	TaskMS    *float64        `json:"task_ms"`
	// WallMS is the wall time the runner itself measured for the call
	// that answered (the request written to the worker until its reply,
	// or one CLI process from start to exit): task_ms can never exceed
	// it, and the join holds it to that (a runner may leave it out).
	WallMS *float64 `json:"wall_ms,omitempty"`
	Error  string   `json:"error,omitempty"`
}

// NativeMetaSchema is the schema of native_meta.json.
const NativeMetaSchema = "trtmc-qual/native-meta/v1"

// NativeMeta is native_meta.json, what a native run may tell the row:
// which path answered and what its task_ms measures. The row records it
// as provenance.native.
type NativeMeta struct {
	Schema      string             `json:"schema"`
	Task        string             `json:"task"`
	Path        string             `json:"path"`
	TimingScope string             `json:"timing_scope"`
	Argv        []string           `json:"argv"`
	Worker      *NativeWorkerReady `json:"worker,omitempty"`
	// WorkerBinary is the native worker that answered, found the way
	// TRTMC's control plane finds it (families/trtmc LocateWorker).
	WorkerBinary *NativeWorkerBinary `json:"worker_binary,omitempty"`
	// TokenCounts says whether chat answers carry the Task's own token
	// count.
	TokenCounts bool   `json:"token_counts"`
	Requests    int    `json:"requests"`
	Answered    int    `json:"answered"`
	Errors      int    `json:"errors"`
	Fatal       string `json:"fatal,omitempty"`
}

// NativeWorkerReady is a native worker's handshake, the first line a
// JSONL worker prints (families/trtmc's worker protocol), as recorded in
// native_meta.json.
type NativeWorkerReady struct {
	Event               string   `json:"event"`
	ProtocolVersion     int      `json:"protocol_version"`
	Capabilities        []string `json:"capabilities"`
	DefaultMaxNewTokens int      `json:"default_max_new_tokens"`
}

// NativeWorkerBinary is the native worker program a run used: its path,
// sha256 and where it was found ("--worker-binary", "TRTMC_WORKER_BINARY",
// "launcher": the native trtmc-server on PATH, a source build's launcher
// and its own server's worker, "package": beside the
// tensorrt_model_connect package of the TRTMC interpreter,
// "source-build": $TRTMC_REPO/build), and for a wheel's
// worker the runtime root (the package's bin directory) it was given.
type NativeWorkerBinary struct {
	Path        string `json:"path"`
	SHA256      string `json:"sha256"`
	Source      string `json:"source"`
	RuntimeRoot string `json:"runtime_root,omitempty"`
}
