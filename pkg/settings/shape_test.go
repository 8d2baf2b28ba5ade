package settings_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/settings"
)

// TestCheck: a known key's value must be exactly its shape; an unknown key
// takes anything.
func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, key string
		value     any
		err       string
	}{
		{"retention fits", settings.RetentionTodos, map[string]any{"max_age_seconds": 60.0, "max_rows": 10.0, "max_rows_per_tenant": 5.0}, ""},
		{"any retention key", "retention.future_table", map[string]any{"max_age_seconds": 60.0, "max_rows": 10.0, "max_rows_per_tenant": 5.0}, ""},
		{"payload retention off", settings.RetentionEventPayloads, map[string]any{"max_age_seconds": 0.0}, ""},
		{"payload retention has no row cap", settings.RetentionEventPayloads, map[string]any{"max_age_seconds": 60.0, "max_rows": 10.0}, `has unknown field "max_rows" (allowed: max_age_seconds)`},
		{"payload retention not negative", settings.RetentionEventPayloads, map[string]any{"max_age_seconds": -1.0}, `field "max_age_seconds" must be an integer from 0 to 2147483647`},
		{"not an object", settings.QueueDefaults, 3.0, "must be an object with fields lease_seconds, max_attempts"},
		{"unknown field", settings.QueueDefaults, map[string]any{"max_attempts": 3.0, "lease_seconds": 30.0, "x": 1.0}, `has unknown field "x"`},
		{"missing field", settings.QueueDefaults, map[string]any{"max_attempts": 3.0}, `is missing field "lease_seconds"`},
		{"fraction", settings.QueueDefaults, map[string]any{"max_attempts": 2.5, "lease_seconds": 30.0}, `field "max_attempts" must be an integer from 1 to 1000`},
		{"too large", settings.QueueDefaults, map[string]any{"max_attempts": 3.0, "lease_seconds": 3601.0}, `field "lease_seconds" must be an integer from 1 to 3600`},
		{"string number", settings.IngestLimits, map[string]any{"tenant_requests_per_second": "10"}, `field "tenant_requests_per_second" must be an integer`},
		{"dedup fits", settings.IngestDedup, map[string]any{"window_seconds": 3600.0}, ""},
		{"streams fit", settings.StreamLimits, map[string]any{"max_per_credential": 5.0, "max_per_tenant": 50.0}, ""},
		{"streams need a cap", settings.StreamLimits, map[string]any{"max_per_credential": 0.0, "max_per_tenant": 50.0}, `field "max_per_credential" must be an integer from 1 to 1000000`},
		{"credentials without maximum", settings.AuthCredentials, map[string]any{"max_ttl_seconds": 0.0}, ""},
		{"negative lifetime", settings.AuthCredentials, map[string]any{"max_ttl_seconds": -1.0}, `field "max_ttl_seconds" must be an integer from 0 to 2147483647`},
		{"retention needs a tenant cap", settings.RetentionEvents, map[string]any{"max_age_seconds": 60.0, "max_rows": 10.0}, `is missing field "max_rows_per_tenant"`},
		{"tenant limits fit", settings.TenantLimits, map[string]any{"max_agents": 1.0, "max_credentials": 2.0, "max_endpoints": 3.0, "max_adapters": 4.0, "max_schedules": 5.0}, ""},
		{"adapters bounded", settings.TenantLimits, map[string]any{"max_agents": 1.0, "max_credentials": 2.0, "max_endpoints": 3.0, "max_adapters": 10001.0, "max_schedules": 5.0}, `field "max_adapters" must be an integer from 1 to 10000`},
		{"publishes cannot be switched off", settings.RealtimeLimits, map[string]any{"tenant_durable_per_second": 0.0, "tenant_ephemeral_per_second": 1.0}, `field "tenant_durable_per_second" must be an integer from 1 to 1000000`},
		{"schedules tick at most every second", settings.QueueSchedules, map[string]any{"min_interval_seconds": 0.0}, `field "min_interval_seconds" must be an integer from 1 to 86400`},
		{"unknown key", "feature.flags", []any{"x"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := settings.Check(tc.key, tc.value)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// TestDefaultsFitTheirShapes: a default an operator could not set back is a
// bug in one of the two.
func TestDefaultsFitTheirShapes(t *testing.T) {
	t.Parallel()
	for key, def := range settings.Defaults() {
		require.NoError(t, settings.Check(key, decoded(t, def)), key)
	}
}

// decoded is v as a client's JSON reaches Check.
func decoded(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}
