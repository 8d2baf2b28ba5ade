package sources

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
)

// The language of a route's topic glob and filter, shared by the admin
// API's checks (a route is stored only if it compiles and its cost fits:
// routebudget.go) and the webhook edge, which compiles an endpoint's
// routes once per load of it and runs their filters under one budget per
// delivery (filterrun.go).

// Route filter bounds: the source's size, and a topic glob's.
const (
	maxFilterBytes  = 2048
	maxTopicGlobLen = 255
)

// filterEnv declares a filter's variables: topic, headers (lower-case names)
// and body (the parsed JSON body, or null).
var filterEnv = func() *cel.Env {
	env, err := cel.NewEnv(
		cel.Variable("topic", cel.StringType),
		cel.Variable("headers", cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable("body", cel.DynType),
		cel.ParserExpressionSizeLimit(maxFilterBytes),
	)
	if err != nil {
		panic(fmt.Sprintf("sources: route filter environment: %v", err))
	}
	return env
}()

// Filter is a route filter parsed and type-checked to bool, with what its
// costs depend on: the program size of each literal pattern it matches.
type Filter struct {
	ast *cel.Ast
	// regexInsts is each literal pattern's RE2 program size (instructions),
	// -1 for one that does not compile.
	regexInsts map[string]int
	// dynamicRegex: some matches() takes its pattern from the event, so it
	// is compiled on every call (refused at create time since issue 31).
	dynamicRegex bool
}

// CompileFilter parses and type-checks a route filter: it must evaluate to
// bool. The error is CEL's message, for the client that wrote the filter.
// What a filter may cost is checked apart (checkRouteCosts): a stored
// filter always compiles here, whatever its cost.
func CompileFilter(src string) (*Filter, error) {
	if len(src) > maxFilterBytes {
		return nil, errors.New("must be at most 2048 bytes")
	}
	checked, iss := filterEnv.Compile(src)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if checked.OutputType() != cel.BoolType {
		return nil, fmt.Errorf("must evaluate to bool, not %s", checked.OutputType())
	}
	f := &Filter{ast: checked, regexInsts: map[string]int{}}
	for _, call := range ast.MatchDescendants(ast.NavigateAST(checked.NativeRep()), ast.FunctionMatcher(overloads.Matches)) {
		pattern, ok := literalString(regexArg(call))
		if !ok {
			f.dynamicRegex = true
			continue
		}
		f.regexInsts[pattern] = regexInstructions(pattern)
	}
	return f, nil
}

// regexArg is the pattern of a matches() call, member or global.
func regexArg(call ast.NavigableExpr) ast.Expr {
	args := call.AsCall().Args()
	return args[len(args)-1]
}

// literalString is e's value when e is a string literal.
func literalString(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// regexInstructions is the size of pattern's RE2 program, as Go's regexp
// (CEL's matches) compiles it; -1 when it does not compile. Matching walks
// up to every instruction for every byte of the input, so this, not the
// pattern's length, is what a match costs: `[a-z]{1000}` is 11 characters
// and about 1000 instructions. A pattern whose program is bounded far past
// what a filter may hold is not compiled: the bound stands for its size
// (compiling 40 of those, 40,000 instructions, takes about 10 ms).
func regexInstructions(pattern string) int {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return -1
	}
	if bound := regexSizeBound(re); bound > 4*maxFilterRegexInsts {
		return bound
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return -1
	}
	return len(prog.Inst)
}

// regexSizeBound is at least the size of re's compiled program, read from
// its tree: counted repetitions are what Simplify expands, so they
// multiply. It saturates at 1<<30.
func regexSizeBound(re *syntax.Regexp) int {
	const most = 1 << 30
	n := 2
	switch re.Op {
	case syntax.OpLiteral:
		n += len(re.Rune)
	case syntax.OpRepeat:
		times := re.Max
		if times < 0 { // {n,}: n copies and a star
			times = re.Min + 1
		}
		n += min(most, (times+1)*(regexSizeBound(re.Sub[0])+1))
	default:
		for _, sub := range re.Sub {
			n = min(most, n+regexSizeBound(sub)+1)
		}
	}
	return min(n, most)
}

// isIndex reports whether e is an index, m[k] or l[i].
func isIndex(e ast.NavigableExpr) bool {
	return e.Kind() == ast.CallKind && e.AsCall().FunctionName() == operators.Index
}

// CompileTopicGlob compiles a topic glob: "*" is any run of characters but
// '.' (within one dot-separated segment), "**" any run including dots, and
// every other character matches itself. The whole topic must match.
func CompileTopicGlob(glob string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^`)
	for i := 0; i < len(glob); {
		switch {
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(`.*`)
			i += 2
		case glob[i] == '*':
			b.WriteString(`[^.]*`)
			i++
		default:
			j := i + 1
			for j < len(glob) && glob[j] != '*' {
				j++
			}
			b.WriteString(regexp.QuoteMeta(glob[i:j]))
			i = j
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String()) // quoted literals and fixed fragments always compile
}
