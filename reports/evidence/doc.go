// Package evidence is what makes a run's files trustworthy later: the seal
// (manifest.json: a digest of every file, Seal and VerifySeal), redaction
// of secrets in every encoding (Redactor), and the per-group lock that
// keeps two runs from writing one group's evidence (LockDir, naming the
// run that holds it). The files themselves are written and read through
// reports/fileio (atomic writes, capped reads); commands are quoted by
// reports/text.
package evidence
