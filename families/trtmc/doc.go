// Package trtmc holds the harness-side adapters between trtmc-qual and the
// real TRTMC (NVIDIA/TensorRT-Model-Connect): the code behind the hidden
// verbs `trtmc-qual adapter native|correctness|bundle` that the TRTMC
// families of families/trtmc.yaml call through the {self} placeholder.
//
//   - native: turns the harness's `{request_id, route, payload}` lines into
//     the family's native Task calls — through the persistent JSONL worker
//     (`trtmc-server _serve-worker`, Task time = public_task_call_wall) or,
//     where that is not available, one `trtmc run` / `trtmc detect` process
//     per request — and writes `{request_id, answer, task_ms}` lines in
//     exactly the form the family's extractor compares with the HTTP answer.
//   - correctness: runs TRTMC's own e2e case for the profile against the
//     exact served bundle and converts its result.json stages and metrics
//     into trtmc-qual's correctness result.
//   - bundle: locates or builds a profile's bundle and records its sha256.
//
// The native worker is found as TRTMC's control plane finds it (locate.go),
// never through the console script; nim.go turns TRTMC's detections into
// the NIM shape, and each reply's Task time is held to its domain
// (native.go). trtmctest builds and installs the test-only fake TRTMC
// programs, separate programs as TRTMC's are.
//
// Every fact about TRTMC's commands and formats that this package relies on
// names its source in docs/trtmc.md; where the public sources and the
// stage-4/5 contract differ, the difference is a flag that
// families/trtmc.yaml sets visibly (worker protocol version, capability,
// operation and image field; NIM clamping and rounding; score thresholds).
package trtmc
