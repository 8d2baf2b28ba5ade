//go:build integration

package ingest_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/services/ingest"
)

// ListEvents with include_payload returns every payload, and keeps a page
// within the gRPC message limit by ending it early: four 1 MiB events (the
// largest PublishEvent takes) come back over two pages, whole, newest first.
func TestListEventsWithPayloadsIsBoundedByBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys})
	ctx := asHuman(t, e.human, nil)
	const n, size = 4, 1 << 20
	for i := range n {
		_, err := srv.PublishEvent(ctx, &ingestv1.PublishEventRequest{Topic: "big", Payload: bytes.Repeat([]byte{byte('a' + i)}, size)})
		require.NoError(t, err)
	}
	var got [][]byte
	pages, tok := 0, ""
	for {
		page, err := srv.ListEvents(ctx, &ingestv1.ListEventsRequest{Topic: "big", IncludePayload: true, PageToken: tok})
		require.NoError(t, err)
		pages++
		require.Less(t, proto.Size(page), 4<<20, "a page stays under gRPC's 4 MiB")
		for _, ev := range page.GetEvents() {
			require.Len(t, ev.GetPayload(), size)
			got = append(got, ev.GetPayload())
		}
		if tok = page.GetNextPageToken(); tok == "" {
			break
		}
	}
	require.Equal(t, 2, pages, "the byte bound ends the first page early (page_size 100 would fit all four)")
	require.Len(t, got, n)
	for i, p := range got {
		require.Equal(t, byte('a'+n-1-i), p[0], "newest first, each once")
	}
}
