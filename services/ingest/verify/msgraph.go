package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
)

// msgraphVerifier checks Microsoft Graph change notifications. Graph signs
// nothing: each notification carries the clientState the subscription was
// created with, which is the endpoint's secret, and every one of a batch
// must carry it. Lifecycle notifications (lifecycleNotificationUrl) have the
// same shape and are checked the same way.
type msgraphVerifier struct{ secrets [][]byte }

// maxGraphNotifications bounds one batch's items (Graph sends far fewer),
// so a large body cannot multiply the comparisons.
const maxGraphNotifications = 1000

func (v msgraphVerifier) Verify(r Request) (Result, error) {
	var batch struct {
		Value []struct {
			ClientState *string `json:"clientState"`
		} `json:"value"`
	}
	if err := json.Unmarshal(r.Body, &batch); err != nil {
		return Result{}, unverified("msgraph: body is not a notification batch")
	}
	if len(batch.Value) == 0 || len(batch.Value) > maxGraphNotifications {
		return Result{}, unverified("msgraph: no notifications, or too many")
	}
	for _, n := range batch.Value {
		if n.ClientState == nil || !v.isClientState(*n.ClientState) {
			return Result{}, unverified("msgraph: clientState mismatch")
		}
	}
	return Result{Scheme: SchemeMSGraph}, nil
}

// isClientState compares digests, so neither the content nor the length of
// a secret shows in the timing; every secret is compared.
func (v msgraphVerifier) isClientState(s string) bool {
	got := sha256.Sum256([]byte(s))
	match := false
	for _, secret := range v.secrets {
		want := sha256.Sum256(secret)
		if hmac.Equal(got[:], want[:]) {
			match = true
		}
	}
	return match
}

// Handshake answers Graph's subscription validation, a POST
// ?validationToken=T (Graph signs nothing; the owner's create-subscription
// call is waiting on it): 200 text/plain T, decoded, within 10 seconds.
func (v msgraphVerifier) Handshake(r Request) (Answer, bool, error) {
	if isGet(r) || !r.Query.Has("validationToken") {
		return Answer{}, false, nil
	}
	token, ok := singleQuery(r.Query, "validationToken")
	if !ok || !echoable(token) {
		return badToken("validationToken"), true, nil
	}
	return textAnswer(token), true, nil
}
