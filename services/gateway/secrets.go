package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Secrets travel in request bodies, never in URLs: access logs, proxies and
// shell history keep URLs, and a query string decodes "+" as a space, which
// corrupts base64 secrets. grpc-gateway would fill a request field from a
// query parameter of its name, so the edge refuses, before the route's
// handler runs, any query parameter that would set a secret.
//
// Which names those are is decided in one place: every field marked
// debug_redact in a request message of the gateway's services (at any
// depth, so endpoint.secret too), plus credentialKeys. A new secret field
// is covered by marking it debug_redact in its .proto.

// credentialKeys name credentials that no field descriptor describes: keys
// inside JSON-valued fields (an adapter's config, a google.protobuf.Struct),
// which a query parameter such as adapter.config.password would address.
// ("secret" comes from the contracts: Endpoint.secret and the requests'
// secret fields are marked debug_redact.)
var credentialKeys = []string{"password"}

// secretParams returns the lower-cased names, proto and JSON spellings,
// that a query parameter may not end in.
func secretParams() (map[string]bool, error) {
	out := map[string]bool{}
	for _, k := range credentialKeys {
		out[k] = true
	}
	seen := map[protoreflect.FullName]bool{}
	var walk func(m protoreflect.MessageDescriptor)
	walk = func(m protoreflect.MessageDescriptor) {
		if seen[m.FullName()] {
			return
		}
		seen[m.FullName()] = true
		for i := range m.Fields().Len() {
			f := m.Fields().Get(i)
			if opts, ok := f.Options().(*descriptorpb.FieldOptions); ok && opts.GetDebugRedact() {
				out[strings.ToLower(string(f.Name()))] = true
				out[strings.ToLower(f.JSONName())] = true
			}
			if f.Message() != nil {
				walk(f.Message())
			}
		}
	}
	for _, s := range services {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(s.desc.ServiceName))
		if err != nil {
			return nil, fmt.Errorf("gateway secret fields: %w", err)
		}
		sd, ok := d.(protoreflect.ServiceDescriptor)
		if !ok {
			return nil, fmt.Errorf("gateway secret fields: %s is not a service", s.desc.ServiceName)
		}
		for i := range sd.Methods().Len() {
			walk(sd.Methods().Get(i).Input())
		}
	}
	return out, nil
}

// secretInQuery is the refusal of a request whose query string would set a
// secret, or nil. A parameter is matched by its last dotted segment
// (endpoint.secret, adapter.config.password), ignoring case, and whatever
// its value; the value is never read, logged or echoed.
func (g *Gateway) secretInQuery(r *http.Request) error {
	for pair := range strings.SplitSeq(r.URL.RawQuery, "&") {
		key, _, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		if i := strings.LastIndexByte(key, '.'); i >= 0 {
			key = key[i+1:]
		}
		if name := strings.ToLower(key); g.secretParams[name] {
			return withHTTPStatus(http.StatusBadRequest, codes.InvalidArgument,
				fmt.Sprintf("%q belongs in the JSON request body, not the URL (query strings are logged)", name))
		}
	}
	return nil
}
