//go:build integration

package queue_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
)

// TestTodoKindWithInvisibleCharactersIsRefused reproduces finding 12 for a
// todo's kind, which the console shows and workers switch on: with a bidi
// override or a zero-width space it reads as another kind. Enqueue, a batch
// entry and a schedule's template are INVALID_ARGUMENT naming the field,
// and nothing is written; a kind in any script stays valid.
func TestTodoKindWithInvisibleCharactersIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.owner(t)
	before := e.snapshot(t)
	bad := "send\u202Eliam"
	for field, call := range map[string]func() error{
		"kind": func() error {
			_, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "mail", Kind: bad})
			return err
		},
		"requests[1].kind": func() error {
			_, err := e.srv.EnqueueBatch(ctx, &queuev1.EnqueueBatchRequest{Queue: "mail", Requests: []*queuev1.EnqueueRequest{
				{Kind: "send"}, {Kind: "se\u200bnd"},
			}})
			return err
		},
		"template.kind": func() error {
			_, err := e.srv.CreateSchedule(ctx, &queuev1.CreateScheduleRequest{Name: "nightly", Cron: "@hourly", Template: &queuev1.EnqueueRequest{Queue: "mail", Kind: bad}})
			return err
		},
	} {
		err := call()
		st, _ := apierr.ToStatus(err)
		require.Equal(t, codes.InvalidArgument, st.Code(), "%s: %v", field, err)
		require.Contains(t, st.Message(), "only visible characters are accepted", field)
		var fields []string
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok {
				for _, v := range br.GetFieldViolations() {
					fields = append(fields, v.GetField())
				}
			}
		}
		require.Equal(t, []string{field}, fields)
	}
	require.Equal(t, before, e.snapshot(t), "nothing was written")

	_, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "mail", Kind: "Rechnung senden 東京"})
	require.NoError(t, err)
}
