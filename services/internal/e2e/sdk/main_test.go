//go:build e2e

package sdk_test

import (
	"testing"

	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

func TestMain(m *testing.M) { e2etest.Main(m) }
