//go:build integration

package admin_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
)

const (
	kindWebhook = adminv1.AdapterKind_ADAPTER_KIND_WEBHOOK
	kindRedis   = adminv1.AdapterKind_ADAPTER_KIND_REDIS_STREAM
)

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	require.NoError(t, err)
	return s
}

// redisAdapter is a valid REDIS_STREAM adapter with a minimal config,
// reading the stream named like it.
func redisAdapter(t *testing.T, name string) *adminv1.Adapter {
	t.Helper()
	return &adminv1.Adapter{
		Name: name, Kind: kindRedis, Queue: "orders",
		Config: mustStruct(t, map[string]any{"addr": "redis.internal:6379", "stream": name}),
	}
}

func (e *env) createAdapter(ctx context.Context, t *testing.T, a *adminv1.Adapter) *adminv1.Adapter {
	t.Helper()
	created, err := e.srv.CreateAdapter(ctx, &adminv1.CreateAdapterRequest{Adapter: a})
	require.NoError(t, err)
	return created.GetAdapter()
}

// storedConfig is adapters.config as the database holds it.
func (e *env) storedConfig(t *testing.T, id string) map[string]any {
	t.Helper()
	var raw []byte
	require.NoError(t, e.pool.QueryRow(t.Context(), "SELECT config FROM adapters WHERE id = $1", id).Scan(&raw))
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// violations returns the field → description pairs of an INVALID_ARGUMENT.
func violations(t *testing.T, err error) map[string]string {
	t.Helper()
	require.Error(t, err)
	st, internal := apierr.ToStatus(err)
	require.False(t, internal, "internal error: %v", err)
	require.Equal(t, codes.InvalidArgument, st.Code(), "%v", err)
	out := map[string]string{}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out[v.GetField()] = v.GetDescription()
			}
		}
	}
	return out
}

func TestCreateAdapterEachKind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, "")

	hook := e.createAdapter(ctx, t, &adminv1.Adapter{
		Name: "github", Kind: kindWebhook, EndpointId: ep.GetId(), AgentId: alice.agent.GetId(), Queue: "hooks",
	})
	require.NotEmpty(t, hook.GetId())
	require.Equal(t, alice.human.GetId(), hook.GetHumanId())
	require.Equal(t, kindWebhook, hook.GetKind())
	require.Equal(t, ep.GetId(), hook.GetEndpointId())
	require.Equal(t, alice.agent.GetId(), hook.GetAgentId())
	require.Equal(t, "hooks", hook.GetQueue())
	require.True(t, hook.GetEnabled(), "enabled defaults to true")
	require.NotNil(t, hook.GetConfig(), "config is never null")
	require.Empty(t, hook.GetConfig().GetFields())
	require.Empty(t, hook.GetCursor())
	require.Nil(t, hook.GetLastPolledAt())
	require.Empty(t, hook.GetLastError())
	require.NotNil(t, hook.GetCreatedAt())
	require.NotNil(t, hook.GetUpdatedAt())
	require.Empty(t, e.storedConfig(t, hook.GetId()))

	in := redisAdapter(t, "orders")
	in.Enabled = ptrTo(false)
	in.Cursor = "1700000000000-0" // output only on create: ignored
	pull := e.createAdapter(ctx, t, in)
	require.Equal(t, kindRedis, pull.GetKind())
	require.Empty(t, pull.GetEndpointId())
	require.False(t, pull.GetEnabled())
	require.Empty(t, pull.GetCursor())
	want := map[string]any{
		"addr": "redis.internal:6379", "stream": "orders", "group": "switchboard", "start": "$", "db": float64(0),
		"username": "", "body_field": "body", "max_deliveries": float64(5), "batch_size": float64(100),
	}
	require.Equal(t, want, pull.GetConfig().AsMap(), "defaults filled")
	require.Equal(t, want, e.storedConfig(t, pull.GetId()), "the normalized config is stored")

	full := map[string]any{
		"addr": "[::1]:6380", "stream": "s", "group": "g", "start": "0", "db": 15,
		"username": "reader", "body_field": "payload", "max_deliveries": 1000, "batch_size": 1,
	}
	in = redisAdapter(t, "full")
	in.Config = mustStruct(t, full)
	got := e.createAdapter(ctx, t, in)
	require.Equal(t, mustStruct(t, full).AsMap(), got.GetConfig().AsMap(), "given values kept")

	fetched, err := e.srv.GetAdapter(ctx, &adminv1.GetAdapterRequest{Id: pull.GetId()})
	require.NoError(t, err)
	require.Equal(t, want, fetched.GetAdapter().GetConfig().AsMap())
	require.Equal(t, pull.GetName(), fetched.GetAdapter().GetName())

	// name is unique per human.
	_, err = e.srv.CreateAdapter(ctx, &adminv1.CreateAdapterRequest{Adapter: redisAdapter(t, "orders")})
	requireCode(t, codes.AlreadyExists, err)
	// Another human may reuse it (for a stream of its own).
	bob := e.seedTenant(t, "bob")
	bobs := redisAdapter(t, "orders")
	bobs.Config = mustStruct(t, map[string]any{"addr": "redis.internal:6379", "stream": "bob-orders"})
	e.createAdapter(e.asTenant(t, mustUUID(t, bob.human.GetId())), t, bobs)
}

func ptrTo[T any](v T) *T { return &v }

func TestCreateAdapterRedisStreamConfigValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	const del = "\x00delete"
	base := func(kv ...any) map[string]any {
		m := map[string]any{"addr": "localhost:6379", "stream": "events"}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == del {
				delete(m, kv[i].(string))
				continue
			}
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	cases := map[string]struct {
		config map[string]any
		field  string
		desc   string
	}{
		"missing addr":          {base("addr", del), "adapter.config.addr", "is required"},
		"missing stream":        {base("stream", del), "adapter.config.stream", "is required"},
		"empty stream":          {base("stream", ""), "adapter.config.stream", ""},
		"long stream":           {base("stream", string(make([]byte, 256))), "adapter.config.stream", ""},
		"addr without port":     {base("addr", "localhost"), "adapter.config.addr", ""},
		"addr without host":     {base("addr", ":6379"), "adapter.config.addr", ""},
		"port zero":             {base("addr", "localhost:0"), "adapter.config.addr", ""},
		"port too big":          {base("addr", "localhost:65536"), "adapter.config.addr", ""},
		"port not a number":     {base("addr", "localhost:redis"), "adapter.config.addr", ""},
		"addr too long":         {base("addr", string(make([]byte, 250))+"x:6379"), "adapter.config.addr", ""},
		"addr not a string":     {base("addr", 6379), "adapter.config.addr", "must be a string"},
		"unknown key":           {base("sentinel", true), "adapter.config.sentinel", ""},
		"password":              {base("password", "hunter2"), "adapter.config.password", "passwords are not supported yet: they would be stored in clear"},
		"empty password":        {base("password", ""), "adapter.config.password", "passwords are not supported yet: they would be stored in clear"},
		"group empty":           {base("group", ""), "adapter.config.group", ""},
		"group not a string":    {base("group", 1), "adapter.config.group", "must be a string"},
		"start other":           {base("start", ">"), "adapter.config.start", ""},
		"start number":          {base("start", 0), "adapter.config.start", "must be a string"},
		"db negative":           {base("db", -1), "adapter.config.db", "must be between 0 and 15"},
		"db too big":            {base("db", 16), "adapter.config.db", "must be between 0 and 15"},
		"db fractional":         {base("db", 1.5), "adapter.config.db", "must be an integer"},
		"db string":             {base("db", "1"), "adapter.config.db", "must be an integer"},
		"db null":               {base("db", nil), "adapter.config.db", "must be an integer"},
		"username too long":     {base("username", string(make([]byte, 256))), "adapter.config.username", ""},
		"username not a string": {base("username", false), "adapter.config.username", "must be a string"},
		"body_field empty":      {base("body_field", ""), "adapter.config.body_field", ""},
		"max_deliveries zero":   {base("max_deliveries", 0), "adapter.config.max_deliveries", "must be between 1 and 1000"},
		"max_deliveries big":    {base("max_deliveries", 1001), "adapter.config.max_deliveries", "must be between 1 and 1000"},
		"batch_size zero":       {base("batch_size", 0), "adapter.config.batch_size", "must be between 1 and 1000"},
		"batch_size big":        {base("batch_size", 1001), "adapter.config.batch_size", "must be between 1 and 1000"},
		"batch_size list":       {base("batch_size", []any{1}), "adapter.config.batch_size", "must be an integer"},
		"no config":             {nil, "adapter.config.addr", "is required"},
	}
	before := snapshot(t.Context(), t, e.pool)
	// Runs once the parallel subtests are done; t.Context() is canceled by then.
	t.Cleanup(func() {
		require.Equal(t, before, snapshot(context.WithoutCancel(t.Context()), t, e.pool), "nothing stored")
	})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := redisAdapter(t, "bad")
			in.Config = nil
			if tc.config != nil {
				in.Config = mustStruct(t, tc.config)
			}
			_, err := e.srv.CreateAdapter(ctx, &adminv1.CreateAdapterRequest{Adapter: in})
			v := violations(t, err)
			require.Contains(t, v, tc.field, "%v", err)
			if tc.desc != "" {
				require.Equal(t, tc.desc, v[tc.field])
			}
		})
	}
	t.Run("every violation is reported", func(t *testing.T) {
		t.Parallel()
		in := redisAdapter(t, "bad")
		in.Config = mustStruct(t, map[string]any{"password": "x", "db": 99})
		v := violations(t, func() error {
			_, err := e.srv.CreateAdapter(ctx, &adminv1.CreateAdapterRequest{Adapter: in})
			return err
		}())
		for _, f := range []string{"adapter.config.addr", "adapter.config.stream", "adapter.config.password", "adapter.config.db"} {
			require.Contains(t, v, f)
		}
	})
}

func TestCreateAdapterValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	bob := e.seedTenant(t, "bob")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, "")
	bobEp, _ := e.createEndpoint(e.asTenant(t, mustUUID(t, bob.human.GetId())), t,
		&adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, "")
	hook := func(mod func(*adminv1.Adapter)) *adminv1.Adapter {
		a := &adminv1.Adapter{Name: "hook", Kind: kindWebhook, EndpointId: ep.GetId(), Queue: "hooks"}
		mod(a)
		return a
	}
	before := snapshot(t.Context(), t, e.pool)
	t.Cleanup(func() {
		require.Equal(t, before, snapshot(context.WithoutCancel(t.Context()), t, e.pool), "nothing stored")
	})
	checkCreateAdapterRejects(t, e, ctx, hook, ep, bob, bobEp)
}

func checkCreateAdapterRejects(t *testing.T, e *env, ctx context.Context, hook func(func(*adminv1.Adapter)) *adminv1.Adapter,
	ep *adminv1.Endpoint, bob tenant, bobEp *adminv1.Endpoint,
) {
	t.Helper()
	invalidCases := map[string]struct {
		a     *adminv1.Adapter
		field string
	}{
		"no adapter":               {nil, "adapter"},
		"no kind":                  {hook(func(a *adminv1.Adapter) { a.Kind = 0 }), "adapter.kind"},
		"undefined kind":           {hook(func(a *adminv1.Adapter) { a.Kind = 42 }), "adapter.kind"},
		"no name":                  {hook(func(a *adminv1.Adapter) { a.Name = "" }), "adapter.name"},
		"bad name":                 {hook(func(a *adminv1.Adapter) { a.Name = "Hook!" }), "adapter.name"},
		"no queue":                 {hook(func(a *adminv1.Adapter) { a.Queue = "" }), "adapter.queue"},
		"bad queue":                {hook(func(a *adminv1.Adapter) { a.Queue = "-q" }), "adapter.queue"},
		"webhook without endpoint": {hook(func(a *adminv1.Adapter) { a.EndpointId = "" }), "adapter.endpoint_id"},
		"webhook with config":      {hook(func(a *adminv1.Adapter) { a.Config = mustStruct(t, map[string]any{"addr": "x:1"}) }), "adapter.config"},
		"bad endpoint id":          {hook(func(a *adminv1.Adapter) { a.EndpointId = "nope" }), "adapter.endpoint_id"},
		"bad agent id":             {hook(func(a *adminv1.Adapter) { a.AgentId = "nope" }), "adapter.agent_id"},
		"bad human id":             {hook(func(a *adminv1.Adapter) { a.HumanId = "nope" }), "adapter.human_id"},
		"redis stream with endpoint": {func() *adminv1.Adapter {
			a := redisAdapter(t, "r")
			a.EndpointId = ep.GetId()
			return a
		}(), "adapter.endpoint_id"},
	}
	for name, tc := range invalidCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := e.srv.CreateAdapter(ctx, &adminv1.CreateAdapterRequest{Adapter: tc.a})
			requireInvalid(t, err, tc.field)
		})
	}
	notFound := map[string]*adminv1.Adapter{
		"unknown endpoint":       hook(func(a *adminv1.Adapter) { a.EndpointId = uuid.NewString() }),
		"another human endpoint": hook(func(a *adminv1.Adapter) { a.EndpointId = bobEp.GetId() }),
		"unknown agent":          hook(func(a *adminv1.Adapter) { a.AgentId = uuid.NewString() }),
		"another human agent":    hook(func(a *adminv1.Adapter) { a.AgentId = bob.agent.GetId() }),
		"another human":          hook(func(a *adminv1.Adapter) { a.HumanId = bob.human.GetId() }),
	}
	for name, a := range notFound {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := e.srv.CreateAdapter(ctx, &adminv1.CreateAdapterRequest{Adapter: a})
			requireCode(t, codes.NotFound, err)
		})
	}
}

func TestAdapterTenancy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	bob := e.seedTenant(t, "bob")
	aliceCtx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	bobCtx := e.asTenant(t, mustUUID(t, bob.human.GetId()))
	aliceEp, _ := e.createEndpoint(aliceCtx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, "")
	a := e.createAdapter(aliceCtx, t, &adminv1.Adapter{Name: "hook", Kind: kindWebhook, EndpointId: aliceEp.GetId(), Queue: "hooks"})

	before := snapshot(t.Context(), t, e.pool)
	_, err := e.srv.GetAdapter(bobCtx, &adminv1.GetAdapterRequest{Id: a.GetId()})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.UpdateAdapter(bobCtx, &adminv1.UpdateAdapterRequest{Adapter: &adminv1.Adapter{Id: a.GetId(), Queue: "mine"}})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.DeleteAdapter(bobCtx, &adminv1.DeleteAdapterRequest{Id: a.GetId()})
	requireCode(t, codes.NotFound, err)
	list, err := e.srv.ListAdapters(bobCtx, &adminv1.ListAdaptersRequest{HumanId: alice.human.GetId()})
	require.NoError(t, err)
	require.Empty(t, list.GetAdapters())
	// Bob may neither create for Alice nor attach Alice's endpoint or agent.
	in := redisAdapter(t, "r")
	in.HumanId = alice.human.GetId()
	_, err = e.srv.CreateAdapter(bobCtx, &adminv1.CreateAdapterRequest{Adapter: in})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.CreateAdapter(bobCtx, &adminv1.CreateAdapterRequest{Adapter: &adminv1.Adapter{
		Name: "steal", Kind: kindWebhook, EndpointId: aliceEp.GetId(), Queue: "q",
	}})
	requireCode(t, codes.NotFound, err)
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))

	// Nor move his own adapters to Alice's endpoint or agent.
	bobEp, _ := e.createEndpoint(bobCtx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, "")
	bobHook := e.createAdapter(bobCtx, t, &adminv1.Adapter{Name: "hook", Kind: kindWebhook, EndpointId: bobEp.GetId(), Queue: "hooks"})
	before = snapshot(t.Context(), t, e.pool)
	_, err = e.srv.UpdateAdapter(bobCtx, &adminv1.UpdateAdapterRequest{Adapter: &adminv1.Adapter{Id: bobHook.GetId(), EndpointId: aliceEp.GetId()}})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.UpdateAdapter(bobCtx, &adminv1.UpdateAdapterRequest{Adapter: &adminv1.Adapter{Id: bobHook.GetId(), AgentId: alice.agent.GetId()}})
	requireCode(t, codes.NotFound, err)
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))

	// An administrator may create for another human, with that human's endpoint and agent only.
	root := e.rootCtx(t)
	forBob := e.createAdapter(root, t, &adminv1.Adapter{
		HumanId: bob.human.GetId(), Name: "admin-made", Kind: kindWebhook, EndpointId: bobEp.GetId(), AgentId: bob.agent.GetId(), Queue: "q",
	})
	require.Equal(t, bob.human.GetId(), forBob.GetHumanId())
	_, err = e.srv.CreateAdapter(root, &adminv1.CreateAdapterRequest{Adapter: &adminv1.Adapter{
		HumanId: bob.human.GetId(), Name: "mixed", Kind: kindWebhook, EndpointId: aliceEp.GetId(), Queue: "q",
	}})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.GetAdapter(root, &adminv1.GetAdapterRequest{Id: a.GetId()})
	require.NoError(t, err)
	all, err := e.srv.ListAdapters(root, &adminv1.ListAdaptersRequest{})
	require.NoError(t, err)
	require.Len(t, all.GetAdapters(), 3)
	onlyBob, err := e.srv.ListAdapters(root, &adminv1.ListAdaptersRequest{HumanId: bob.human.GetId()})
	require.NoError(t, err)
	require.Len(t, onlyBob.GetAdapters(), 2)
	mine, err := e.srv.ListAdapters(bobCtx, &adminv1.ListAdaptersRequest{})
	require.NoError(t, err)
	require.Len(t, mine.GetAdapters(), 2)
}

func TestListAdaptersPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	var ids []string
	for _, name := range []string{"a1", "a2", "a3"} {
		ids = append(ids, e.createAdapter(ctx, t, redisAdapter(t, name)).GetId())
	}
	first, err := e.srv.ListAdapters(ctx, &adminv1.ListAdaptersRequest{PageSize: 2})
	require.NoError(t, err)
	require.Len(t, first.GetAdapters(), 2)
	require.NotEmpty(t, first.GetNextPageToken())
	second, err := e.srv.ListAdapters(ctx, &adminv1.ListAdaptersRequest{PageSize: 2, PageToken: first.GetNextPageToken()})
	require.NoError(t, err)
	require.Empty(t, second.GetNextPageToken())
	var got []string
	for _, a := range append(first.GetAdapters(), second.GetAdapters()...) {
		got = append(got, a.GetId())
		require.Equal(t, "switchboard", a.GetConfig().GetFields()["group"].GetStringValue())
	}
	require.Equal(t, ids, got, "oldest first")
	_, err = e.srv.ListAdapters(ctx, &adminv1.ListAdaptersRequest{PageToken: first.GetNextPageToken(), HumanId: alice.human.GetId()})
	requireInvalid(t, err, "page_token")
	_, err = e.srv.ListAdapters(ctx, &adminv1.ListAdaptersRequest{PageToken: "garbage"})
	requireInvalid(t, err, "page_token")
	_, err = e.srv.ListAdapters(ctx, &adminv1.ListAdaptersRequest{PageSize: 1001})
	requireInvalid(t, err, "page_size")
	// An endpoints token does not page adapters.
	for range 2 {
		e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, "")
	}
	eps, err := e.srv.ListEndpoints(ctx, &adminv1.ListEndpointsRequest{PageSize: 1})
	require.NoError(t, err)
	_, err = e.srv.ListAdapters(ctx, &adminv1.ListAdaptersRequest{PageToken: eps.GetNextPageToken()})
	requireInvalid(t, err, "page_token")
}

func TestUpdateAdapter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	a := e.createAdapter(ctx, t, redisAdapter(t, "orders"))
	mask := func(paths ...string) *fieldmaskpb.FieldMask { return &fieldmaskpb.FieldMask{Paths: paths} }
	update := func(in *adminv1.Adapter, m *fieldmaskpb.FieldMask) (*adminv1.Adapter, error) {
		in.Id = a.GetId()
		out, err := e.srv.UpdateAdapter(ctx, &adminv1.UpdateAdapterRequest{Adapter: in, UpdateMask: m})
		return out.GetAdapter(), err
	}

	// config is replaced whole and normalized again.
	got, err := update(&adminv1.Adapter{Config: mustStruct(t, map[string]any{"addr": "other:7000", "stream": "s2", "batch_size": 10})}, mask("config"))
	require.NoError(t, err)
	wantCfg := map[string]any{
		"addr": "other:7000", "stream": "s2", "group": "switchboard", "start": "$", "db": float64(0),
		"username": "", "body_field": "body", "max_deliveries": float64(5), "batch_size": float64(10),
	}
	require.Equal(t, wantCfg, got.GetConfig().AsMap())
	require.Equal(t, wantCfg, e.storedConfig(t, a.GetId()))
	require.Equal(t, "orders", got.GetQueue(), "unmasked fields keep their value")
	require.True(t, got.GetUpdatedAt().AsTime().After(a.GetUpdatedAt().AsTime()) || got.GetUpdatedAt().AsTime().Equal(a.GetUpdatedAt().AsTime()))

	// A path inside config (as the gateway derives) stands for the whole config.
	got, err = update(&adminv1.Adapter{Config: mustStruct(t, map[string]any{"addr": "third:7001", "stream": "s3"})}, mask("config.addr"))
	require.NoError(t, err)
	require.Equal(t, "third:7001", got.GetConfig().GetFields()["addr"].GetStringValue())
	require.InDelta(t, 100, got.GetConfig().GetFields()["batch_size"].GetNumberValue(), 0, "defaults refilled")

	// queue and enabled; an unset mask means the fields set in the message.
	got, err = update(&adminv1.Adapter{Queue: "payments", Enabled: ptrTo(false)}, nil)
	require.NoError(t, err)
	require.Equal(t, "payments", got.GetQueue())
	require.False(t, got.GetEnabled())
	require.Equal(t, "s3", got.GetConfig().GetFields()["stream"].GetStringValue())
	got, err = update(&adminv1.Adapter{}, mask("enabled"))
	require.NoError(t, err)
	require.False(t, got.GetEnabled(), "named but unset enabled is false")
	got, err = update(&adminv1.Adapter{Enabled: ptrTo(true), Name: "renamed", AgentId: alice.agent.GetId()}, nil)
	require.NoError(t, err)
	require.True(t, got.GetEnabled())
	require.Equal(t, "renamed", got.GetName())
	require.Equal(t, alice.agent.GetId(), got.GetAgentId())
	got, err = update(&adminv1.Adapter{}, mask("agent_id"))
	require.NoError(t, err)
	require.Empty(t, got.GetAgentId(), "named but unset agent_id clears it")

	// The contract lets an update rewind the cursor.
	got, err = update(&adminv1.Adapter{Cursor: "1700000000000-0"}, nil)
	require.NoError(t, err)
	require.Equal(t, "1700000000000-0", got.GetCursor())
	got, err = update(&adminv1.Adapter{}, mask("cursor"))
	require.NoError(t, err)
	require.Empty(t, got.GetCursor())

	// An empty update returns the adapter unchanged.
	got, err = update(&adminv1.Adapter{}, nil)
	require.NoError(t, err)
	require.Equal(t, "renamed", got.GetName())

	// Failures change nothing.
	before := snapshot(t.Context(), t, e.pool)
	_, err = update(&adminv1.Adapter{Config: mustStruct(t, map[string]any{"addr": "x:1", "stream": "s", "password": "p"})}, mask("config"))
	require.Equal(t, "passwords are not supported yet: they would be stored in clear", violations(t, err)["adapter.config.password"])
	_, err = update(&adminv1.Adapter{}, mask("config"))
	requireInvalid(t, err, "adapter.config.addr")
	_, err = update(&adminv1.Adapter{Queue: "Bad Queue"}, nil)
	requireInvalid(t, err, "adapter.queue")
	_, err = update(&adminv1.Adapter{}, mask("queue"))
	requireInvalid(t, err, "adapter.queue")
	_, err = update(&adminv1.Adapter{}, mask("kind"))
	requireInvalid(t, err, "update_mask")
	_, err = update(&adminv1.Adapter{}, mask("last_error"))
	requireInvalid(t, err, "update_mask")
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))
	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, "")
	before = snapshot(t.Context(), t, e.pool)
	_, err = update(&adminv1.Adapter{EndpointId: ep.GetId()}, nil)
	requireInvalid(t, err, "adapter.endpoint_id")
	_, err = update(&adminv1.Adapter{AgentId: uuid.NewString()}, nil)
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.UpdateAdapter(ctx, &adminv1.UpdateAdapterRequest{Adapter: &adminv1.Adapter{Id: uuid.NewString(), Queue: "q"}})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.UpdateAdapter(ctx, &adminv1.UpdateAdapterRequest{Adapter: &adminv1.Adapter{Id: "nope", Queue: "q"}})
	requireInvalid(t, err, "adapter.id")
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))

	// A name the human already uses.
	e.createAdapter(ctx, t, redisAdapter(t, "taken"))
	_, err = update(&adminv1.Adapter{Name: "taken"}, nil)
	requireCode(t, codes.AlreadyExists, err)
}

func TestUpdateWebhookAdapter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	ep1, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, "")
	ep2, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, "")
	a := e.createAdapter(ctx, t, &adminv1.Adapter{Name: "hook", Kind: kindWebhook, EndpointId: ep1.GetId(), Queue: "hooks"})
	upd := func(in *adminv1.Adapter, paths ...string) (*adminv1.Adapter, error) {
		in.Id = a.GetId()
		req := &adminv1.UpdateAdapterRequest{Adapter: in}
		if len(paths) > 0 {
			req.UpdateMask = &fieldmaskpb.FieldMask{Paths: paths}
		}
		out, err := e.srv.UpdateAdapter(ctx, req)
		return out.GetAdapter(), err
	}
	got, err := upd(&adminv1.Adapter{EndpointId: ep2.GetId()})
	require.NoError(t, err)
	require.Equal(t, ep2.GetId(), got.GetEndpointId())
	got, err = upd(&adminv1.Adapter{}, "config")
	require.NoError(t, err, "an empty config is the WEBHOOK config")
	require.Empty(t, got.GetConfig().GetFields())

	before := snapshot(t.Context(), t, e.pool)
	_, err = upd(&adminv1.Adapter{}, "endpoint_id")
	requireInvalid(t, err, "adapter.endpoint_id")
	_, err = upd(&adminv1.Adapter{Config: mustStruct(t, map[string]any{"k": "v"})})
	requireInvalid(t, err, "adapter.config")
	_, err = upd(&adminv1.Adapter{Cursor: "1-0"})
	requireInvalid(t, err, "adapter.cursor")
	_, err = upd(&adminv1.Adapter{EndpointId: uuid.NewString()})
	requireCode(t, codes.NotFound, err)
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))

	// Deleting the endpoint deletes its WEBHOOK adapter.
	_, err = e.srv.DeleteEndpoint(ctx, &adminv1.DeleteEndpointRequest{Id: ep2.GetId()})
	require.NoError(t, err)
	_, err = e.srv.GetAdapter(ctx, &adminv1.GetAdapterRequest{Id: a.GetId()})
	requireCode(t, codes.NotFound, err)
}

func TestDeleteAdapter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	a := e.createAdapter(ctx, t, redisAdapter(t, "orders"))
	keep := e.createAdapter(ctx, t, redisAdapter(t, "keep"))
	_, err := e.srv.DeleteAdapter(ctx, &adminv1.DeleteAdapterRequest{Id: a.GetId()})
	require.NoError(t, err)
	_, err = e.srv.GetAdapter(ctx, &adminv1.GetAdapterRequest{Id: a.GetId()})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.DeleteAdapter(ctx, &adminv1.DeleteAdapterRequest{Id: a.GetId()})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.DeleteAdapter(ctx, &adminv1.DeleteAdapterRequest{Id: "nope"})
	requireInvalid(t, err, "id")
	_, err = e.srv.GetAdapter(ctx, &adminv1.GetAdapterRequest{Id: "nope"})
	requireInvalid(t, err, "id")
	require.Equal(t, 1, count(t, e.pool, "SELECT count(*) FROM adapters WHERE id = $1", keep.GetId()))
	// The name is free again.
	e.createAdapter(ctx, t, redisAdapter(t, "orders"))
}
