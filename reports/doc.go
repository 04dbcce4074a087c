// Package reports loads a group's evidence and renders it. Load reads
// OUT/<group>/<profile>/result.json of one or more result roots with
// their seals checked, and the group's inventory snapshot, into a
// GroupReport (the group model: one row per profile, the coverage, the
// conflicts of merged roots); the renderers write it (terminal table,
// Markdown, CSV, JSON, HTML, the docs block, the completion summary).
//
// The row model and the verdict are reports/verdict's. Publication is
// reports/publish's: the public formats are rendered only from the public
// copy a report's Publisher makes (publication.go), so this package never
// depends on it. Renderers read only stored evidence; nothing here runs
// anything.
package reports
