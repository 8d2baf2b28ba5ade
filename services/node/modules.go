package node

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/switchboard/switchboard/services/admin"
	"github.com/switchboard/switchboard/services/gateway"
	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/queue"
	"github.com/switchboard/switchboard/services/realtime"
	"github.com/switchboard/switchboard/services/registry"
)

// A module is one piece a node can run: a service that `switchboard serve`
// names, or a part that services share. A node builds the modules of the
// services it runs and everything they depend on, each once, dependencies
// first (Loki's pattern: pkg/loki/modules.go). A new service is its own
// folder, a build function in services.go and one line in this table.
type module struct {
	// service: selectable with `switchboard serve` (and in `serve all`).
	service bool
	// deps are built before this module, and pulled in by it.
	deps []string
	// after are built before this module when the node runs them anyway,
	// but not pulled in: optional collaborators (lifecycle events go
	// through the node's realtime service when realtime is there).
	after []string
	// hot: it runs statements every worker or event repeats, on the pool of
	// generic-plan sessions (see newPool).
	hot   bool
	build func(*assembly) error
}

// The modules that services share (not selectable).
const (
	// modCore is every node: pools, the gRPC server with auth, health,
	// membership, readiness and migrations.
	modCore = "core"
	// modNotifier is the node's one listen connection and notify sender.
	modNotifier = "notifier"
	// modTodos is the node's one writer of todos (queue.Todos).
	modTodos = "todos"
	// modSources is the owner of endpoints and adapters (ingest/sources).
	modSources = "sources"
	// modLifecycleEvents is where the queue and ingest publish their
	// lifecycle events: the node's realtime service when it runs it, else a
	// publisher-only part that sends them to the realtime nodes.
	modLifecycleEvents = "lifecycle-events"
)

var modules = map[string]module{
	modCore:            {build: (*assembly).buildCore},
	modNotifier:        {deps: []string{modCore}, build: (*assembly).buildNotifier},
	modLifecycleEvents: {deps: []string{modNotifier}, after: []string{realtime.Name}, build: (*assembly).buildLifecycleEvents},
	modTodos:           {deps: []string{modNotifier, modLifecycleEvents}, hot: true, build: (*assembly).buildTodos},
	modSources:         {deps: []string{modNotifier}, build: (*assembly).buildSources},
	registry.Name:      {service: true, deps: []string{modCore}, build: (*assembly).buildRegistry},
	queue.Name:         {service: true, deps: []string{modTodos}, hot: true, build: (*assembly).buildQueue},
	ingest.Name:        {service: true, deps: []string{modTodos, modSources, modLifecycleEvents}, hot: true, build: (*assembly).buildIngest},
	realtime.Name:      {service: true, deps: []string{modNotifier}, build: (*assembly).buildRealtime},
	admin.Name:         {service: true, deps: []string{modSources}, build: (*assembly).buildAdmin},
	gateway.Name:       {service: true, deps: []string{modCore}, build: (*assembly).buildGateway},
}

// All is every service, sorted: what `serve all` runs.
var All = func() []string {
	var out []string
	for name, m := range modules {
		if m.service {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}()

// ParseServices turns `all` or a comma-separated subset ("queue,gateway")
// into a sorted, de-duplicated list of services.
func ParseServices(spec string) ([]string, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "all" {
		return slices.Clone(All), nil
	}
	var out []string
	for _, s := range strings.Split(spec, ",") {
		s = strings.TrimSpace(s)
		if !modules[s].service {
			return nil, fmt.Errorf("unknown service %q (want all or a comma-separated list of %s)", s, strings.Join(All, ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, nil
}

// plan returns the modules a node running services builds, in build order:
// every dependency before its dependents, optional collaborators that are in
// the plan before the modules that use them, and otherwise by name, so the
// order is the same on every node.
func plan(services []string) ([]string, error) {
	want := map[string]bool{}
	var pull func(name string) error
	pull = func(name string) error {
		m, ok := modules[name]
		if !ok {
			return fmt.Errorf("unknown module %q", name)
		}
		if want[name] {
			return nil
		}
		want[name] = true
		for _, d := range m.deps {
			if err := pull(d); err != nil {
				return err
			}
		}
		return nil
	}
	for _, s := range services {
		if err := pull(s); err != nil {
			return nil, err
		}
	}
	var order []string
	done := map[string]bool{}
	for len(order) < len(want) {
		ready := ""
		for _, name := range slices.Sorted(maps.Keys(want)) {
			if !done[name] && depsDone(name, want, done) {
				ready = name
				break
			}
		}
		if ready == "" {
			return nil, fmt.Errorf("modules %v depend on each other in a cycle", slices.Sorted(maps.Keys(want)))
		}
		done[ready] = true
		order = append(order, ready)
	}
	return order, nil
}

// depsDone reports whether every module name waits for is built.
func depsDone(name string, want, done map[string]bool) bool {
	m := modules[name]
	for _, d := range m.deps {
		if !done[d] {
			return false
		}
	}
	for _, a := range m.after {
		if want[a] && !done[a] {
			return false
		}
	}
	return true
}
