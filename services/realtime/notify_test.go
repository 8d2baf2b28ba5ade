package realtime

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A "durable events up to N" notification wakes the reader only when it has
// not yet dispatched N; one that is not an id always does.
func TestNotificationPokesOnlyAReaderBehindIt(t *testing.T) {
	t.Parallel()
	s := &Server{hub: newHub(nil)}
	s.reader = newReader(nil, nil, s.hub, nil, Options{}.withDefaults())
	s.hub.start(10)
	poked := func() bool {
		select {
		case <-s.reader.kick:
			return true
		default:
			return false
		}
	}

	s.newDurable("9")
	require.False(t, poked(), "ids the reader has already dispatched")
	s.newDurable("10")
	require.False(t, poked(), "its own cursor")
	s.newDurable("11")
	require.True(t, poked(), "a newer id")
	s.newDurable("not an id")
	require.True(t, poked(), "a payload it cannot read")
	s.newDurable("")
	require.True(t, poked(), "an empty payload")
}
