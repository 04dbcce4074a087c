// Package reports loads a group's evidence and renders it: Load reads
// OUT/<group>/<profile>/result.json of one or more result roots with their
// seals checked and the group's inventory snapshot, into a GroupReport
// (the group model: one row per profile, the coverage, the conflicts of
// merged roots), and the renderers write it (terminal table, Markdown,
// CSV, JSON, HTML, the docs block, the completion summary), and publication
// (the Scrubber, the public report, the leak scanner). The row model
// and the verdict are reports/verdict's; renderers read only stored
// evidence, and nothing here runs anything.
package reports
