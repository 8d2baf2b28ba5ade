package sources

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"cel.dev/cel-go/cel"
)

// The language of a route's topic glob and filter, shared by the admin
// API's checks (a route is stored only if it compiles) and the webhook edge,
// which compiles an endpoint's routes once per load of it.

// Route filter bounds: the source's size, and what one evaluation may cost
// (CEL's abstract cost units: about one per operation and per element an
// operation walks), so a filter over a large body cannot take the request
// goroutine for long. Evaluation needs no timeout: the cost limit stops it.
const (
	maxFilterBytes  = 2048
	maxTopicGlobLen = 255
	filterCostLimit = 100_000
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

// CompileFilter compiles a route filter into a bounded program: it must
// parse and type-check to bool. The error is CEL's message, for the client
// that wrote the filter.
func CompileFilter(src string) (cel.Program, error) {
	if len(src) > maxFilterBytes {
		return nil, errors.New("must be at most 2048 bytes")
	}
	ast, iss := filterEnv.Compile(src)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if ast.OutputType() != cel.BoolType {
		return nil, fmt.Errorf("must evaluate to bool, not %s", ast.OutputType())
	}
	prg, err := filterEnv.Program(ast, cel.CostLimit(filterCostLimit))
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	return prg, nil
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
