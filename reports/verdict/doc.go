// Package verdict is where a checkpoint's verdict is decided: the one row
// model of trtmc-qual (result.json, schema trtmc-qual/result/v2, one per
// checkpoint, and the lines of joined.jsonl and mismatches.jsonl), the
// reason codes and their classes (reasons.go: one constant per code, one
// table of classes), and Judge (judge.go), the one implementation of the
// qualification contract: every reason and every verdict of a row is made
// there, from the facts the pipeline recorded. The strict readers of what
// Judge judges sit beside it: result.json (DecodeResult) and the family's
// correctness.json (ReadCorrectness), each error naming file, line and
// field (EvidenceError).
//
// Two more things the row carries are defined here, as their sources
// define them. semantics.go: a family's answer semantics and judging
// criteria (Semantics, Tolerance), the one type from families.Family to
// the row's answers and the join, and CriteriaDigest, what a row pins of
// them. entry.go: the inventory as a row carries it (InventoryEntry, a
// profile of the snapshot OUT/<group>/inventory.json as the loader reads
// it, and its Digest; the kinds, statuses and parts of a profile).
//
// It imports only the shared leaves (reports/fileio, reports/text), so
// every layer above may read and judge rows; nothing here runs anything.
package verdict
