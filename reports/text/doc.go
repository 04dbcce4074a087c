// Package text is the one home of how trtmc-qual writes text for people:
// what may reach a terminal (Quote, Printable), commands a person pastes
// (ShellJoin, ShellQuote, and ShellSplit, which reads them back), and the
// small line and word helpers every message uses (FirstLine, LastLines,
// Indent, OneLine, Clip, Plural, Count).
//
// It is a leaf: it imports nothing of this module, so every layer, from
// families/proc and inventory up, may use it. It lives under reports/ because
// it is how reports, rows and messages are written, beside the other
// leaves of that kind (reports/markdown, reports/junit).
package text
