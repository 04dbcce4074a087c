package verdict

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/packages"
)

// TestEveryCodeProducedIsInTheTable type-checks the module's production
// code (tests excluded, both build-tag sets) and finds every value of type
// Code, wherever it is written: a constant of this package, an argument of
// stageFailure, a Problem's field, an alias in another package. Each must
// have a row in Codes(), so a code cannot fall silently to the default
// class (broken) and turn a setup error (exit 3) into a failure (exit 1).
// Producers use the constants: a string literal of type Code outside this
// package's constant declarations is refused, and so is a Code converted
// from a string at run time (codes are written, not computed). And every
// Code constant this package declares is in the table, once.
func TestEveryCodeProducedIsInTheTable(t *testing.T) {
	// Both tag sets type-check the same files; each finding is reported once.
	found := map[string]bool{}
	errorf := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if !found[msg] {
			found[msg] = true
			t.Error(msg)
		}
	}
	known := map[Code]bool{}
	for _, c := range Codes() {
		known[c.Code] = true
	}
	for _, tags := range [][]string{nil, {"-tags", "integration"}} {
		cfg := &packages.Config{
			Mode:       packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax,
			Dir:        "../..",
			BuildFlags: tags,
		}
		pkgs, err := packages.Load(cfg, "./...")
		require.NoError(t, err)
		require.NotEmpty(t, pkgs)
		var codeType types.Type
		for _, p := range pkgs {
			require.Empty(t, p.Errors, "%s", p.PkgPath)
			if p.PkgPath == "github.com/trtmc-qual/trtmc-qual/reports/verdict" {
				codeType = p.Types.Scope().Lookup("Code").Type()
			}
		}
		require.NotNil(t, codeType, "verdict.Code not found")
		declared := 0
		for _, p := range pkgs {
			isCode := func(e ast.Expr) (types.TypeAndValue, bool) {
				tv, ok := p.TypesInfo.Types[e]
				return tv, ok && tv.Type != nil && types.Identical(tv.Type, codeType)
			}
			home := p.PkgPath == "github.com/trtmc-qual/trtmc-qual/reports/verdict"
			for _, f := range p.Syntax {
				inConst := false
				ast.Inspect(f, func(n ast.Node) bool {
					if d, ok := n.(*ast.GenDecl); ok {
						inConst = d.Tok == token.CONST
						return true
					}
					e, ok := n.(ast.Expr)
					if !ok {
						return true
					}
					tv, ok := isCode(e)
					if !ok {
						return true
					}
					pos := p.Fset.Position(e.Pos())
					if tv.Value != nil {
						v := Code(constant.StringVal(tv.Value))
						if !known[v] {
							errorf("%s: reason code %q has no row in verdict.Codes(): use a Code constant (or add its row)", pos, v)
						}
						if _, lit := ast.Unparen(e).(*ast.BasicLit); lit && !(home && inConst) {
							errorf("%s: reason code %q written as a string: use its constant (verdict.Code...)", pos, v)
						}
						return false
					}
					if call, ok := e.(*ast.CallExpr); ok && len(call.Args) == 1 {
						if fn, ok := p.TypesInfo.Types[call.Fun]; ok && fn.IsType() {
							errorf("%s: a reason code converted from a value at run time: use a Code constant", pos)
						}
					}
					return true
				})
			}
			if p.PkgPath != "github.com/trtmc-qual/trtmc-qual/reports/verdict" {
				continue
			}
			scope := p.Types.Scope()
			for _, name := range scope.Names() {
				c, ok := scope.Lookup(name).(*types.Const)
				if !ok || !types.Identical(c.Type(), codeType) {
					continue
				}
				declared++
				assert.True(t, known[Code(constant.StringVal(c.Val()))], "verdict.%s (%s) has no row in Codes()", name, c.Val())
			}
		}
		assert.Len(t, Codes(), declared, "one constant per row of Codes()")
	}
}

// TestClassOfUnknownCode: a code no row names (a typo in stored evidence,
// another harness's code) is broken, never a pass or a failure.
func TestClassOfUnknownCode(t *testing.T) {
	assert.Equal(t, ClassBroken, ClassOf("made_up"))
	assert.Equal(t, ClassBroken, ClassOf(""))
	for _, c := range Codes() {
		assert.Equal(t, c.Class, ClassOf(c.Code), c.Code)
		assert.True(t, slices.Contains([]Class{ClassInterrupted, ClassNotRun, ClassSetup, ClassBroken, ClassFailed, ClassExcluded}, c.Class), "%s: class %q", c.Code, c.Class)
		assert.Equal(t, strings.ToLower(string(c.Code)), string(c.Code), "codes are snake_case")
		assert.NotEmpty(t, c.Meaning, c.Code)
	}
}

// TestCodesAreTheirClassesFunctions: each row of Codes() sits in the
// function of its class (notRunCodes, setupCodes, ...), so the table reads
// most severe class first, as Judge sorts reasons.
func TestCodesAreTheirClassesFunctions(t *testing.T) {
	parts := []struct {
		name    string
		rows    []CodeInfo
		classes []Class
	}{
		{"notRunCodes", notRunCodes(), []Class{ClassInterrupted, ClassNotRun}},
		{"setupCodes", setupCodes(), []Class{ClassSetup}},
		{"brokenCodes", brokenCodes(), []Class{ClassBroken}},
		{"failedCodes", failedCodes(), []Class{ClassFailed}},
		{"excludedCodes", excludedCodes(), []Class{ClassExcluded}},
	}
	for _, p := range parts {
		require.NotEmpty(t, p.rows, p.name)
		for _, c := range p.rows {
			assert.Contains(t, p.classes, c.Class, "%s: %s is of class %s", p.name, c.Code, c.Class)
		}
	}
	rows := Codes()
	for i := 1; i < len(rows); i++ {
		assert.LessOrEqual(t, classRank(rows[i-1].Class), classRank(rows[i].Class), "Codes(): %s before %s", rows[i-1].Code, rows[i].Code)
	}
}
