// Package aiperf drives the pip-installed AIPerf 0.13.0 benchmark client and
// turns its artifacts into typed, checked results.
//
// Every figure in a trtmc-qual result row comes through this package, so it
// fails closed: AIPerf exits 0 even when requests fail, and its exports can
// be incomplete, so a run is trusted only when the summary, the per-record
// export and the raw export all exist, are final, cover exactly the expected
// requests and agree with each other. Anything else is a named Problem.
//
// The parts:
//
//   - dataset.go: the single_turn JSONL writer (images as data URLs of the
//     exact file bytes, a unique session_id per line) and the corpus reader.
//   - argv.go: Config and the exact argv passed to `aiperf profile`.
//   - driver.go: the version check and Run (own process group, SIGINT then
//     SIGKILL, a deadline, stdout/stderr kept, waiting for final exports).
//   - lines.go, records.go, summary.go, outputs.go: streaming parsers for
//     profile_export.jsonl, profile_export_raw.jsonl,
//     profile_export_aiperf.json, outputs.json and inputs.json.
//   - collect.go: joins the artifacts into a Run and applies the
//     fail-closed checks.
//   - percentile.go: AIPerf's own percentile method, so parsed per-request
//     latencies reproduce the summary exactly.
//
// docs/aiperf.md lists the flags used, the files read and where the installed
// 0.13.0 differs from the notes this package was first written from.
package aiperf
