// Package text is the one home of how trtmc-qual writes text for people:
// what may reach a terminal (Quote, Printable), commands a person pastes
// (ShellJoin, ShellQuote, and ShellSplit, which reads them back), the
// small line and word helpers every message uses (FirstLine, Headline,
// LastLines, Indent, OneLine, Clip, Plural, Count), and the one check of
// the names that become directories, cells and words of commands
// (CheckName, SafeName: profile ids, group and family names; a rejected
// name is quoted by Quote), which the inventory, the loader and the flags
// all call.
//
// It is a leaf: it imports nothing of this module, so every layer, from
// families/proc and inventory up, may use it. It lives under reports/ because
// it is how reports, rows and messages are written, beside the other
// leaves of that kind (reports/markdown, reports/junit).
package text
