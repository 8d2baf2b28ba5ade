package sources

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/ingest/verify"
)

// Topic sources and body-hash dedup limits, as the contract and the schema
// (endpoints_topic_*_check, endpoints_body_dedup_window_check) state them.
const (
	maxTopicPointerLen    = 255
	maxBodyDedupWindowSec = 7 * 24 * 60 * 60
)

// checkTopicFields checks an endpoint's topic source (at most one of a
// header name and a JSON pointer) and its body dedup window.
func checkTopicFields(f EndpointFields) error {
	switch {
	case f.TopicHeader != nil && f.TopicPointer != nil:
		return invalid("endpoint.topic_pointer", "must be empty when topic_header is set (at most one topic source)")
	case f.TopicHeader != nil && (len(*f.TopicHeader) > maxHeaderLen || !headerName(*f.TopicHeader)):
		return invalid("endpoint.topic_header", "must be an HTTP header name of at most 128 characters")
	case f.TopicPointer != nil && len(*f.TopicPointer) > maxTopicPointerLen:
		return invalid("endpoint.topic_pointer", "must be at most 255 characters")
	case f.BodyDedupWindowSeconds != nil && (*f.BodyDedupWindowSeconds < 0 || *f.BodyDedupWindowSeconds > maxBodyDedupWindowSec):
		return invalid("endpoint.body_dedup_window_seconds", "must be between 0 and 604800 (7 days)")
	}
	if f.TopicPointer != nil {
		if _, err := verify.ParsePointer(*f.TopicPointer); err != nil {
			return invalid("endpoint.topic_pointer", err.Error())
		}
	}
	return nil
}

// withBodyDedupDefault fills an unset body dedup window with the scheme's
// default: off where the scheme's delivery id is signed (a replay carries
// its id, which dedups it), else on with the deployment's ingest.dedup
// window (capped at 7 days), so a captured body cannot be replayed under a
// fresh unsigned id.
func (s *Store) withBodyDedupDefault(ctx context.Context, db settings.DB, f *EndpointFields) error {
	if f.BodyDedupWindowSeconds != nil {
		return nil
	}
	var w int32
	if !verify.SignsDeliveryID(f.Verification) {
		d, err := settings.Read(ctx, db, settings.IngestDedup, settings.DefaultDedup)
		if err != nil {
			return fmt.Errorf("sources: %w", err)
		}
		w = int32(min(max(d.WindowSeconds, 1), maxBodyDedupWindowSec)) // bounded: 1 to 604800
	}
	f.BodyDedupWindowSeconds = &w
	return nil
}

// hookTopics is the part of Hook this file owns: the endpoint's topic
// override and its body dedup window.
func hookTopics(topicHeader, topicPointer *string, windowSeconds int32) (verify.TopicSource, time.Duration) {
	var src verify.TopicSource
	if topicHeader != nil {
		src.Header = *topicHeader
	}
	if topicPointer != nil {
		src.Pointer = *topicPointer
	}
	return src, time.Duration(windowSeconds) * time.Second
}
