package gateway

import (
	"fmt"
	"net/http"
	"regexp"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// bareVariable is a path variable without a pattern ("{id}"), which a
// compiled route renders with its implied one ("{id=*}").
var bareVariable = regexp.MustCompile(`\{([^}=]+)\}`)

// rpcRoutes maps each route, "METHOD template" as a matched route renders
// it (runtime.Pattern.String), to the full name of the RPC it calls, from
// the google.api.http rules of the gateway's services: the edge needs the
// RPC to know whether the route is open, before the route's handler runs.
func rpcRoutes() (map[string]string, error) {
	out := map[string]string{}
	for _, s := range services {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(s.desc.ServiceName))
		if err != nil {
			return nil, fmt.Errorf("gateway routes: %w", err)
		}
		sd, ok := d.(protoreflect.ServiceDescriptor)
		if !ok {
			return nil, fmt.Errorf("gateway routes: %s is not a service", s.desc.ServiceName)
		}
		for i := range sd.Methods().Len() {
			m := sd.Methods().Get(i)
			rule, _ := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
			full := "/" + string(sd.FullName()) + "/" + string(m.Name())
			for _, r := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
				if method, template := httpRule(r); template != "" {
					out[method+" "+bareVariable.ReplaceAllString(template, "{$1=*}")] = full
				}
			}
		}
	}
	return out, nil
}

// httpRule is a rule's HTTP method and path template ("" for none).
func httpRule(r *annotations.HttpRule) (method, template string) {
	switch {
	case r.GetGet() != "":
		return http.MethodGet, r.GetGet()
	case r.GetPost() != "":
		return http.MethodPost, r.GetPost()
	case r.GetPut() != "":
		return http.MethodPut, r.GetPut()
	case r.GetPatch() != "":
		return http.MethodPatch, r.GetPatch()
	case r.GetDelete() != "":
		return http.MethodDelete, r.GetDelete()
	}
	return r.GetCustom().GetKind(), r.GetCustom().GetPath()
}

// rpcOf is the RPC behind the route r was matched to ("" if unknown, which
// the edge treats as needing a credential, like every non-open RPC).
func (g *Gateway) rpcOf(r *http.Request) string {
	p, ok := runtime.HTTPPattern(r.Context())
	if !ok {
		return ""
	}
	return g.routes[r.Method+" "+p.String()]
}
