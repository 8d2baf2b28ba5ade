//go:build integration

package pgtest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Tests(m)) }
