package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
)

func TestLoadSealingKeys(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(nil))
	require.NoError(t, err)
	require.True(t, c.Ingest.DevSealingKeys, "unset: the development keyring, flagged")
	require.Equal(t, "dev", c.Ingest.SealingKeys.PrimaryID())

	key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	c, err = config.Load(env(map[string]string{config.EnvSealingKeys: "k2:" + key + ",k1:" + key}))
	require.NoError(t, err)
	require.False(t, c.Ingest.DevSealingKeys)
	require.Equal(t, "k2", c.Ingest.SealingKeys.PrimaryID())
	require.True(t, c.Ingest.SealingKeys.NeedsReseal("k1"))

	_, err = config.Load(env(map[string]string{config.EnvSealingKeys: "k1:c2hvcnQ="}))
	require.ErrorContains(t, err, config.EnvSealingKeys+":")
	require.NotContains(t, err.Error(), "c2hvcnQ=", "no key material in the error")
}
