package reports

import (
	"fmt"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// CheckoutNotes say which of a row's checkouts are not exactly their
// commit (a dirty tree, or one that could not be read): the reports show
// them with the rows that ran from them, so a dirty tree is never silent.
func CheckoutNotes(cs []verdict.Checkout) []string {
	var out []string
	for _, c := range cs {
		switch {
		case c.Error != "" && c.Commit == "":
			out = append(out, fmt.Sprintf("checkout %s ($%s): %s", c.Path, c.Name, c.Error))
		case c.Error != "":
			out = append(out, fmt.Sprintf("checkout $%s is commit %s plus changes that could not be digested: %s", c.Name, c.Commit, c.Error))
		case c.Dirty:
			out = append(out, fmt.Sprintf("checkout $%s is dirty: commit %s plus %d changed tracked %s (diff sha256 %s) and %d untracked %s (sha256 %s)",
				c.Name, c.Commit, c.ChangedFiles, text.Plural(c.ChangedFiles, "file", "files"), orDash(c.DiffSHA256),
				c.UntrackedFiles, text.Plural(c.UntrackedFiles, "file", "files"), orDash(c.UntrackedSHA256)))
		}
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
