package realtime

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"regexp"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
)

// ListChannels page sizes: "0–200; 0 means 50".
const (
	defaultChannelPage = 50
	maxChannelPage     = 200
)

// channelPrefix is the contract's prefix pattern: the channel names'
// alphabet (protovalidate checks it too; kept here for direct callers).
var channelPrefix = regexp.MustCompile(`^[A-Za-z0-9:._/-]{1,128}$`)

// channelPageToken is where a listing continues (the last channel
// returned) and the prefix it was issued for. base64url JSON: opaque but not
// secret, since the tenant is applied in SQL on every page.
type channelPageToken struct {
	After  string `json:"a"`
	Prefix string `json:"p"`
}

// ListChannels lists the caller's tenant's channels that have a subscriber
// anywhere in the cluster, by name. Like Presence it is the tenant's view:
// an agent's credential sees the tenant's channels too.
func (s *Server) ListChannels(ctx context.Context, req *realtimev1.ListChannelsRequest) (*realtimev1.ListChannelsResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	prefix := req.GetPrefix()
	if prefix != "" && !channelPrefix.MatchString(prefix) {
		return nil, invalid("prefix", "must match ^[A-Za-z0-9:._/-]{1,128}$")
	}
	limit := req.GetPageSize()
	switch {
	case limit == 0:
		limit = defaultChannelPage
	case limit < 0 || limit > maxChannelPage:
		return nil, invalid("page_size", "must be between 0 and 200")
	}
	after, err := decodeChannelToken(req.GetPageToken(), prefix)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.Channels(ctx, c.human, prefix, after, limit+1) // one more says whether a page follows
	if err != nil {
		return nil, err
	}
	out := &realtimev1.ListChannelsResponse{}
	if int32(len(rows)) > limit { //nolint:gosec // len ≤ 201
		rows = rows[:limit]
		raw, _ := json.Marshal(channelPageToken{After: rows[len(rows)-1].Channel, Prefix: prefix}) // plain strings: cannot fail
		out.NextPageToken = base64.RawURLEncoding.EncodeToString(raw)
	}
	out.Channels = make([]*realtimev1.ChannelInfo, len(rows))
	for i, r := range rows {
		out.Channels[i] = &realtimev1.ChannelInfo{Channel: r.Channel, Subscribers: r.Subscribers, Members: r.Members, NodeIds: r.NodeIds}
	}
	return out, nil
}

// decodeChannelToken returns the channel a token continues after ("" for
// no token).
func decodeChannelToken(tok, prefix string) (string, error) {
	if tok == "" {
		return "", nil
	}
	bad := invalid("page_token", "is not a token returned by ListChannels")
	if len(tok) > 1024 {
		return "", bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	var pt channelPageToken
	if err != nil || json.Unmarshal(raw, &pt) != nil || !channelName.MatchString(pt.After) {
		return "", bad
	}
	if pt.Prefix != prefix {
		return "", invalid("page_token", "was issued for a different prefix")
	}
	return pt.After, nil
}
