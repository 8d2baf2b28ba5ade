//go:build integration

package admin_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
)

func TestHumanLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.rootCtx(t)

	created, err := e.srv.CreateHuman(ctx, &adminv1.CreateHumanRequest{Human: &adminv1.Human{
		Id: "ignored", Email: "Ann@Example.test", DisplayName: "Ann", CreatedAt: timestamppb.Now(),
	}})
	require.NoError(t, err)
	h := created.GetHuman()
	require.NotEqual(t, "ignored", h.GetId())
	mustUUID(t, h.GetId())
	require.Equal(t, "Ann@Example.test", h.GetEmail())
	require.Equal(t, "Ann", h.GetDisplayName())
	require.False(t, h.GetIsAdmin())
	require.NotNil(t, h.GetCreatedAt())
	require.Nil(t, h.GetDisabledAt())

	got, err := e.srv.GetHuman(ctx, &adminv1.GetHumanRequest{Id: h.GetId()})
	require.NoError(t, err)
	require.Equal(t, h.GetEmail(), got.GetHuman().GetEmail())

	// An explicit mask changes only what it names, even when other fields are set.
	upd, err := e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{
		Human:      &adminv1.Human{Id: h.GetId(), DisplayName: "Ann B.", Email: "other@example.test"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"display_name"}},
	})
	require.NoError(t, err)
	require.Equal(t, "Ann B.", upd.GetHuman().GetDisplayName())
	require.Equal(t, "Ann@Example.test", upd.GetHuman().GetEmail())
	require.False(t, upd.GetHuman().GetUpdatedAt().AsTime().Before(h.GetUpdatedAt().AsTime()))

	// No mask: every non-default field; disabled_at's value is ignored (now()).
	upd, err = e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{Human: &adminv1.Human{
		Id: h.GetId(), IsAdmin: true, DisabledAt: timestamppb.New(h.GetCreatedAt().AsTime().AddDate(-10, 0, 0)),
	}})
	require.NoError(t, err)
	require.True(t, upd.GetHuman().GetIsAdmin())
	require.NotNil(t, upd.GetHuman().GetDisabledAt())
	require.False(t, upd.GetHuman().GetDisabledAt().AsTime().Before(h.GetCreatedAt().AsTime()))
	require.Equal(t, "Ann B.", upd.GetHuman().GetDisplayName())

	// Named but unset: re-enable; false is_admin needs the mask too.
	upd, err = e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{
		Human:      &adminv1.Human{Id: h.GetId()},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"disabled_at", "is_admin"}},
	})
	require.NoError(t, err)
	require.Nil(t, upd.GetHuman().GetDisabledAt())
	require.False(t, upd.GetHuman().GetIsAdmin())

	// Nothing to change returns the human as it is.
	upd, err = e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{Human: &adminv1.Human{Id: h.GetId()}})
	require.NoError(t, err)
	require.Equal(t, "Ann B.", upd.GetHuman().GetDisplayName())

	list, err := e.srv.ListHumans(ctx, &adminv1.ListHumansRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetHumans(), 2) // root and Ann, oldest first
	require.Equal(t, e.root.String(), list.GetHumans()[0].GetId())
	require.Equal(t, h.GetId(), list.GetHumans()[1].GetId())
	require.Empty(t, list.GetNextPageToken())

	_, err = e.srv.DeleteHuman(ctx, &adminv1.DeleteHumanRequest{Id: h.GetId()})
	require.NoError(t, err)
	_, err = e.srv.GetHuman(ctx, &adminv1.GetHumanRequest{Id: h.GetId()})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.DeleteHuman(ctx, &adminv1.DeleteHumanRequest{Id: h.GetId()})
	requireCode(t, codes.NotFound, err)
}

func TestCreateHumanDuplicateEmailIgnoresCase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.rootCtx(t)
	_, err := e.srv.CreateHuman(ctx, &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: "dup@example.test"}})
	require.NoError(t, err)
	before := snapshot(t.Context(), t, e.pool)

	_, err = e.srv.CreateHuman(ctx, &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: "DUP@example.TEST"}})
	requireCode(t, codes.AlreadyExists, err)
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))

	// Taking the email by update is refused the same way.
	other, err := e.srv.CreateHuman(ctx, &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: "other@example.test"}})
	require.NoError(t, err)
	before = snapshot(t.Context(), t, e.pool)
	_, err = e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{
		Human:      &adminv1.Human{Id: other.GetHuman().GetId(), Email: "Dup@Example.test"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"email"}},
	})
	requireCode(t, codes.AlreadyExists, err)
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))
}

func TestHumanValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.rootCtx(t)
	before := snapshot(t.Context(), t, e.pool)
	cases := map[string]struct {
		call  func() error
		field string
	}{
		"create without email": {func() error {
			_, err := e.srv.CreateHuman(ctx, &adminv1.CreateHumanRequest{Human: &adminv1.Human{DisplayName: "x"}})
			return err
		}, "human.email"},
		"create with malformed email": {func() error {
			_, err := e.srv.CreateHuman(ctx, &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: "no at sign"}})
			return err
		}, "human.email"},
		"create with overlong email": {func() error {
			_, err := e.srv.CreateHuman(ctx, &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: strings.Repeat("a", 320) + "@x"}})
			return err
		}, "human.email"},
		"get with bad id": {func() error {
			_, err := e.srv.GetHuman(ctx, &adminv1.GetHumanRequest{Id: "nope"})
			return err
		}, "id"},
		"update clearing email": {func() error {
			_, err := e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{
				Human: &adminv1.Human{Id: e.root.String()}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"email"}},
			})
			return err
		}, "human.email"},
		"update with unknown mask path": {func() error {
			_, err := e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{
				Human: &adminv1.Human{Id: e.root.String()}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"created_at"}},
			})
			return err
		}, "update_mask"},
		"update with a path inside a scalar": {func() error {
			_, err := e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{
				Human: &adminv1.Human{Id: e.root.String()}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"email.x"}},
			})
			return err
		}, "update_mask"},
		"list with page_size over 1000": {func() error {
			_, err := e.srv.ListHumans(ctx, &adminv1.ListHumansRequest{PageSize: 1001})
			return err
		}, "page_size"},
		"list with a garbage page_token": {func() error {
			_, err := e.srv.ListHumans(ctx, &adminv1.ListHumansRequest{PageToken: "!!not-base64"})
			return err
		}, "page_token"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			requireInvalid(t, tc.call(), tc.field)
			require.Equal(t, before, snapshot(t.Context(), t, e.pool))
		})
	}
}

func TestNonAdministratorHumans(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, a.human.GetId()))

	got, err := e.srv.GetHuman(ctx, &adminv1.GetHumanRequest{Id: a.human.GetId()})
	require.NoError(t, err)
	require.Equal(t, a.human.GetEmail(), got.GetHuman().GetEmail())

	list, err := e.srv.ListHumans(ctx, &adminv1.ListHumansRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetHumans(), 1)
	require.Equal(t, a.human.GetId(), list.GetHumans()[0].GetId())

	upd, err := e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{Human: &adminv1.Human{
		Id: a.human.GetId(), Email: "alice2@example.test", DisplayName: "Alice",
	}})
	require.NoError(t, err)
	require.Equal(t, "alice2@example.test", upd.GetHuman().GetEmail())
	require.Equal(t, "Alice", upd.GetHuman().GetDisplayName())

	before := snapshot(t.Context(), t, e.pool)
	for name, call := range map[string]func() error{
		"promote itself": func() error {
			_, err := e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{Human: &adminv1.Human{Id: a.human.GetId(), IsAdmin: true}})
			return err
		},
		"re-enable or disable itself": func() error {
			_, err := e.srv.UpdateHuman(ctx, &adminv1.UpdateHumanRequest{
				Human: &adminv1.Human{Id: a.human.GetId()}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"disabled_at"}},
			})
			return err
		},
		"create a human": func() error {
			_, err := e.srv.CreateHuman(ctx, &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: "new@example.test"}})
			return err
		},
		"delete itself": func() error {
			_, err := e.srv.DeleteHuman(ctx, &adminv1.DeleteHumanRequest{Id: a.human.GetId()})
			return err
		},
	} {
		requireCode(t, codes.PermissionDenied, call())
		require.Equal(t, before, snapshot(t.Context(), t, e.pool), name)
	}
}

func TestDeleteHumanRemovesEverythingItOwns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.seedTenant(t, "alice")
	b := e.seedTenant(t, "bob")
	for _, h := range []string{a.human.GetId(), b.human.GetId()} {
		_, err := e.pool.Exec(t.Context(), `
			WITH ev AS (
				INSERT INTO events (human_id, source, payload, size_bytes) VALUES ($1, 'publish', '\x00', 1) RETURNING id
			), ep AS (
				INSERT INTO endpoints (human_id, slug, queue, verification)
				VALUES ($1, replace(gen_random_uuid()::text, '-', ''), 'inbox', 'none') RETURNING id
			), rt AS (
				INSERT INTO realtime_events (human_id, channel) VALUES ($1, 'room') RETURNING id
			)
			INSERT INTO todos (human_id, queue, event_id) SELECT $1, 'inbox', ev.id FROM ev`, h)
		require.NoError(t, err)
	}
	tables := []string{"agents", "credentials", "endpoints", "events", "todos", "realtime_events"}
	for _, tbl := range tables {
		require.Equal(t, 1, count(t, e.pool, "SELECT count(*) FROM "+tbl+" WHERE human_id = $1", a.human.GetId()), tbl)
	}

	_, err := e.srv.DeleteHuman(e.rootCtx(t), &adminv1.DeleteHumanRequest{Id: a.human.GetId()})
	require.NoError(t, err)
	for _, tbl := range tables {
		require.Zero(t, count(t, e.pool, "SELECT count(*) FROM "+tbl+" WHERE human_id = $1", a.human.GetId()), tbl)
		require.Equal(t, 1, count(t, e.pool, "SELECT count(*) FROM "+tbl+" WHERE human_id = $1", b.human.GetId()), tbl)
	}
}
