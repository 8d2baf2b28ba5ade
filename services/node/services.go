package node

import (
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard/switchboard/services/admin"
	"github.com/switchboard/switchboard/services/gateway"
	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/queue"
	"github.com/switchboard/switchboard/services/realtime"
	"github.com/switchboard/switchboard/services/registry"
)

// All is every service, in the order `serve all` starts them.
var All = []string{registry.Name, queue.Name, ingest.Name, realtime.Name, admin.Name, gateway.Name}

// ParseServices turns `all` or a comma-separated subset ("queue,gateway")
// into a de-duplicated list in canonical order.
func ParseServices(spec string) ([]string, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "all" {
		return slices.Clone(All), nil
	}
	want := map[string]bool{}
	for _, s := range strings.Split(spec, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(All, s) {
			return nil, fmt.Errorf("unknown service %q (want all or a comma-separated list of %s)", s, strings.Join(All, ", "))
		}
		want[s] = true
	}
	var out []string
	for _, s := range All {
		if want[s] {
			out = append(out, s)
		}
	}
	return out, nil
}
