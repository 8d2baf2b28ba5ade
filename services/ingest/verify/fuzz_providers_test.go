package verify_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// The handshake schemes' fuzz targets share the oracle of fuzz_test.go:
// whatever Verify accepts carries the MAC computed independently; and a
// signed handshake is only ever answered 200 when its signature matches.

func FuzzZoom(f *testing.F) {
	v, err := verify.New(verify.Config{Scheme: verify.SchemeZoom, Secrets: secrets(zoomSecret)})
	if err != nil {
		f.Fatal(err)
	}
	hs := v.(verify.Handshaker)
	ts := strconv.FormatInt(zoomNow.Unix(), 10)
	f.Add([]byte(zoomEvent), ts, zoomHeaders(zoomSecret, ts, zoomEvent).Get("X-Zm-Signature"))
	f.Add([]byte(zoomValidation), ts, zoomHeaders(zoomSecret, ts, zoomValidation).Get("X-Zm-Signature"))
	f.Fuzz(func(t *testing.T, body []byte, ts, sig string) {
		req := verify.Request{Body: body, Header: header("X-Zm-Request-Timestamp", ts, "X-Zm-Signature", sig), Now: zoomNow, Method: http.MethodPost}
		want := "v0=" + hex.EncodeToString(mac(sha256.New, []byte(zoomSecret), "v0:"+ts+":"+string(body)))
		if _, err := v.Verify(req); err == nil && !containsField([]string{sig}, want, true) {
			t.Fatalf("accepted signature %q that does not match the body", sig)
		}
		if a, ok, err := hs.Handshake(req); err == nil && ok && a.Status == http.StatusOK && !containsField([]string{sig}, want, true) {
			t.Fatalf("answered a handshake whose signature %q does not match", sig)
		}
	})
}

func FuzzMeta(f *testing.F) {
	v, err := verify.New(metaConfig(metaSecret))
	if err != nil {
		f.Fatal(err)
	}
	hs := v.(verify.Handshaker)
	f.Add([]byte(metaEvent), "sha256="+macSHA256Hex([]byte(metaSecret), metaEvent), "subscribe", metaVerifyToken, "1158201444")
	f.Add([]byte(""), "sha256=", "subscribe", "meatyhamhocks", "1")
	f.Fuzz(func(t *testing.T, body []byte, sig, mode, token, challenge string) {
		if _, err := v.Verify(verify.Request{Body: body, Header: header("X-Hub-Signature-256", sig)}); err == nil {
			if want := "sha256=" + macSHA256Hex([]byte(metaSecret), string(body)); !containsField([]string{sig}, want, true) {
				t.Fatalf("accepted signature %q that does not match the body", sig)
			}
		}
		q := query("hub.mode", mode, "hub.verify_token", token, "hub.challenge", challenge)
		a, ok, err := hs.Handshake(verify.Request{Method: http.MethodGet, Query: q})
		if err == nil && ok && a.Status == http.StatusOK && (token != metaVerifyToken || mode != "subscribe" || string(a.Body) != challenge) {
			t.Fatalf("answered mode %q token %q with %q", mode, token, a.Body)
		}
	})
}

func FuzzX(f *testing.F) {
	v, err := verify.New(verify.Config{Scheme: verify.SchemeX, Secrets: secrets(xSecret)})
	if err != nil {
		f.Fatal(err)
	}
	hs := v.(verify.Handshaker)
	f.Add([]byte(xEvent), "sha256="+macSHA256B64([]byte(xSecret), xEvent), "9b4507b3")
	f.Fuzz(func(t *testing.T, body []byte, sig, crc string) {
		if _, err := v.Verify(verify.Request{Body: body, Header: header("X-Twitter-Webhooks-Signature", sig)}); err == nil {
			if want := "sha256=" + macSHA256B64([]byte(xSecret), string(body)); sig != want {
				t.Fatalf("accepted signature %q that does not match the body", sig)
			}
		}
		a, ok, err := hs.Handshake(verify.Request{Method: http.MethodGet, Query: query("crc_token", crc)})
		if err != nil || !ok || a.Status != http.StatusOK {
			return
		}
		var got struct {
			ResponseToken string `json:"response_token"`
		}
		if json.Unmarshal(a.Body, &got) != nil || got.ResponseToken != "sha256="+base64.StdEncoding.EncodeToString(mac(sha256.New, []byte(xSecret), crc)) {
			t.Fatalf("crc_token %q answered %q", crc, a.Body)
		}
	})
}

func FuzzMSGraph(f *testing.F) {
	v, err := verify.New(verify.Config{Scheme: verify.SchemeMSGraph, Secrets: secrets(graphClientState)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(graphChange))
	f.Add([]byte(graphLifecycle))
	f.Add([]byte(`{"value":[{"clientState":"secretClientValue"},{}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := v.Verify(verify.Request{Body: body}); err != nil {
			return
		}
		var batch struct {
			Value []map[string]json.RawMessage `json:"value"`
		}
		if json.Unmarshal(body, &batch) != nil || len(batch.Value) == 0 {
			t.Fatalf("accepted %q, which is not a batch", body)
		}
		for _, n := range batch.Value {
			if !carriesClientState(n) {
				t.Fatalf("accepted %q with a notification lacking the clientState", body)
			}
		}
	})
}

// carriesClientState: some member named clientState (encoding/json matches
// names case-insensitively, and the last of repeated ones wins) holds it.
func carriesClientState(n map[string]json.RawMessage) bool {
	for k, raw := range n {
		var cs string
		if strings.EqualFold(k, "clientState") && json.Unmarshal(raw, &cs) == nil && cs == graphClientState {
			return true
		}
	}
	return false
}
