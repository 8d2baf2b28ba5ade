//go:build integration

package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
)

func TestReadSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	// Settings are deployment-wide: any admin-scoped caller may read them.
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))

	list, err := e.srv.ListSettings(ctx, &adminv1.ListSettingsRequest{})
	require.NoError(t, err)
	var keys []string
	for _, s := range list.GetSettings() {
		keys = append(keys, s.GetKey())
	}
	require.Equal(t, []string{
		"auth.credentials", "ingest.dedup", "ingest.limits", "queue.defaults", "queue.schedules", "realtime.limits",
		"retention.event_payloads", "retention.events", "retention.realtime_events", "retention.todos", "streams.limits",
		"tenant.limits",
	}, keys)

	got, err := e.srv.GetSetting(ctx, &adminv1.GetSettingRequest{Key: "queue.defaults"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"max_attempts": float64(25), "lease_seconds": float64(30)}, got.GetSetting().GetValue().GetStructValue().AsMap())
	require.NotEmpty(t, got.GetSetting().GetDescription())
	require.NotNil(t, got.GetSetting().GetUpdatedAt())

	_, err = e.srv.GetSetting(ctx, &adminv1.GetSettingRequest{Key: "no.such.key"})
	requireCode(t, codes.NotFound, err)
}

func TestUpdateSetting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.rootCtx(t)
	orig, err := e.srv.GetSetting(ctx, &adminv1.GetSettingRequest{Key: "retention.events"})
	require.NoError(t, err)

	v := objectValue(t, map[string]any{"max_age_seconds": 3600, "max_rows": 500, "max_rows_per_tenant": 50})
	upd, err := e.srv.UpdateSetting(ctx, &adminv1.UpdateSettingRequest{
		// A path inside value (what the gateway derives from a PATCH body)
		// replaces the whole value; description is not in the mask.
		Setting:    &adminv1.Setting{Key: "retention.events", Value: v, Description: "not in mask"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"value.max_rows"}},
	})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"max_age_seconds": float64(3600), "max_rows": float64(500), "max_rows_per_tenant": float64(50)}, upd.GetSetting().GetValue().GetStructValue().AsMap())
	require.Equal(t, orig.GetSetting().GetDescription(), upd.GetSetting().GetDescription())
	require.True(t, upd.GetSetting().GetUpdatedAt().AsTime().After(orig.GetSetting().GetUpdatedAt().AsTime()))

	// Description only: updated_at is "when the value last changed", so it stays.
	desc, err := e.srv.UpdateSetting(ctx, &adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{Key: "retention.events", Description: "shorter"}})
	require.NoError(t, err)
	require.Equal(t, "shorter", desc.GetSetting().GetDescription())
	require.Equal(t, map[string]any{"max_age_seconds": float64(3600), "max_rows": float64(500), "max_rows_per_tenant": float64(50)}, desc.GetSetting().GetValue().GetStructValue().AsMap())
	require.True(t, desc.GetSetting().GetUpdatedAt().AsTime().Equal(upd.GetSetting().GetUpdatedAt().AsTime()))

	got, err := e.srv.GetSetting(ctx, &adminv1.GetSettingRequest{Key: "retention.events"})
	require.NoError(t, err)
	require.Equal(t, "shorter", got.GetSetting().GetDescription())

	q, err := e.srv.UpdateSetting(ctx, &adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{
		Key: "queue.defaults", Value: objectValue(t, map[string]any{"max_attempts": 1000, "lease_seconds": 3600}),
	}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"max_attempts": float64(1000), "lease_seconds": float64(3600)}, q.GetSetting().GetValue().GetStructValue().AsMap())

	// Payload retention has an age only, and 0 (keep payloads) is a value.
	for _, age := range []float64{86400, 0} {
		p, err := e.srv.UpdateSetting(ctx, &adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{
			Key: "retention.event_payloads", Value: objectValue(t, map[string]any{"max_age_seconds": age}),
		}})
		require.NoError(t, err)
		require.Equal(t, map[string]any{"max_age_seconds": age}, p.GetSetting().GetValue().GetStructValue().AsMap())
	}
}

func TestUpdateSettingRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.rootCtx(t)
	// Before the snapshot: the caller's credential is a row.
	aliceCtx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	before := snapshot(t.Context(), t, e.pool)

	setting := func(key string, fields map[string]any) *adminv1.UpdateSettingRequest {
		return &adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{Key: key, Value: objectValue(t, fields)}}
	}
	retention := func(fields map[string]any) *adminv1.UpdateSettingRequest {
		return &adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{Key: "retention.todos", Value: objectValue(t, fields)}}
	}
	queue := func(fields map[string]any) *adminv1.UpdateSettingRequest {
		return &adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{Key: "queue.defaults", Value: objectValue(t, fields)}}
	}
	invalidCases := map[string]struct {
		req   *adminv1.UpdateSettingRequest
		field string
	}{
		"retention max_age_seconds zero":  {retention(map[string]any{"max_age_seconds": 0, "max_rows": 1, "max_rows_per_tenant": 1}), "setting.value"},
		"retention max_rows negative":     {retention(map[string]any{"max_age_seconds": 1, "max_rows": -5, "max_rows_per_tenant": 1}), "setting.value"},
		"retention max_rows fractional":   {retention(map[string]any{"max_age_seconds": 1, "max_rows": 1.5, "max_rows_per_tenant": 1}), "setting.value"},
		"retention max_rows a string":     {retention(map[string]any{"max_age_seconds": 1, "max_rows": "10", "max_rows_per_tenant": 1}), "setting.value"},
		"retention missing a field":       {retention(map[string]any{"max_age_seconds": 1}), "setting.value"},
		"retention without a tenant cap":  {retention(map[string]any{"max_age_seconds": 1, "max_rows": 1}), "setting.value"},
		"tenant limits without adapters":  {setting("tenant.limits", map[string]any{"max_agents": 1, "max_credentials": 1, "max_endpoints": 1, "max_schedules": 1}), "setting.value"},
		"publishes switched off":          {setting("realtime.limits", map[string]any{"tenant_durable_per_second": 0, "tenant_ephemeral_per_second": 1}), "setting.value"},
		"schedules every 0 seconds":       {setting("queue.schedules", map[string]any{"min_interval_seconds": 0}), "setting.value"},
		"retention with an extra field":   {retention(map[string]any{"max_age_seconds": 1, "max_rows": 1, "x": 1, "max_rows_per_tenant": 1}), "setting.value"},
		"queue max_attempts over 1000":    {queue(map[string]any{"max_attempts": 1001, "lease_seconds": 30}), "setting.value"},
		"queue lease_seconds over 3600":   {queue(map[string]any{"max_attempts": 5, "lease_seconds": 3601}), "setting.value"},
		"queue lease_seconds zero":        {queue(map[string]any{"max_attempts": 5, "lease_seconds": 0}), "setting.value"},
		"value not an object":             {&adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{Key: "queue.defaults", Value: structpb.NewNumberValue(3)}}, "setting.value"},
		"value null":                      {&adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{Key: "queue.defaults", Value: structpb.NewNullValue()}}, "setting.value"},
		"value named but missing":         {&adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{Key: "queue.defaults"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"value"}}}, "setting.value"},
		"key not updatable":               {&adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{Key: "queue.defaults"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"key"}}}, "update_mask"},
		"missing key":                     {&adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{Description: "x"}}, "setting.key"},
		"retention value far too large":   {retention(map[string]any{"max_age_seconds": 1e12, "max_rows": 1, "max_rows_per_tenant": 1}), "setting.value"},
		"queue defaults as a list":        {&adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{Key: "queue.defaults", Value: structpb.NewListValue(&structpb.ListValue{})}}, "setting.value"},
		"retention max_rows boolean true": {retention(map[string]any{"max_age_seconds": 1, "max_rows": true, "max_rows_per_tenant": 1}), "setting.value"},
		"streams without a cap":           {setting("streams.limits", map[string]any{"max_per_credential": 0, "max_per_tenant": 10}), "setting.value"},
		"streams missing the tenant cap":  {setting("streams.limits", map[string]any{"max_per_credential": 10}), "setting.value"},
		"credentials negative lifetime":   {setting("auth.credentials", map[string]any{"max_ttl_seconds": -1}), "setting.value"},
		"credentials lifetime as text":    {setting("auth.credentials", map[string]any{"max_ttl_seconds": "1y"}), "setting.value"},
		"payload retention negative":      {setting("retention.event_payloads", map[string]any{"max_age_seconds": -1}), "setting.value"},
		"payload retention with a cap":    {setting("retention.event_payloads", map[string]any{"max_age_seconds": 60, "max_rows": 10}), "setting.value"},
	}
	for name, tc := range invalidCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := e.srv.UpdateSetting(ctx, tc.req)
			requireInvalid(t, err, tc.field)
			require.Equal(t, before, snapshot(ctx, t, e.pool))
		})
	}

	t.Run("unknown key", func(t *testing.T) {
		t.Parallel()
		_, err := e.srv.UpdateSetting(ctx, &adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{Key: "retention.nothing_here", Description: "x"}})
		requireCode(t, codes.NotFound, err)
		_, err = e.srv.UpdateSetting(ctx, &adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{Key: "brand.new", Value: structpb.NewBoolValue(true)}})
		requireCode(t, codes.NotFound, err)
		require.Equal(t, before, snapshot(ctx, t, e.pool))
	})
	t.Run("non-administrator", func(t *testing.T) {
		t.Parallel()
		_, err := e.srv.UpdateSetting(aliceCtx, queue(map[string]any{"max_attempts": 5, "lease_seconds": 30}))
		requireCode(t, codes.PermissionDenied, err)
		require.Equal(t, before, snapshot(aliceCtx, t, e.pool))
	})
}

func objectValue(t *testing.T, fields map[string]any) *structpb.Value {
	t.Helper()
	s, err := structpb.NewStruct(fields)
	require.NoError(t, err)
	return structpb.NewStructValue(s)
}
