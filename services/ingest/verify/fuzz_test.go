package verify_test

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// The verifier fuzz targets share one oracle: whenever Verify accepts, the
// header must carry the MAC that crypto/hmac computes independently for the
// fuzzed body and timestamp. A mutated body or signature can therefore never
// pass unnoticed. Verify returning an error is always acceptable.

func FuzzStandardWebhooks(f *testing.F) {
	key, err := base64.StdEncoding.DecodeString(swSecretBare)
	if err != nil {
		f.Fatal(err)
	}
	v, err := verify.New(verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: secrets(swSecret)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(swPayload), swMsgID, swTimestamp, "v1,"+swSigV1)
	f.Add([]byte(swPayload), swMsgID, swTimestamp, "v1,"+swSigBogus+" v2,x v1,"+swSigV1)
	f.Add([]byte(swPayload), swMsgID, swTimestamp, "v1a,"+swSigV1a)
	f.Add([]byte(swPayload), swMsgID, "1614265331", "v1,"+swSigV1)
	f.Fuzz(func(t *testing.T, body []byte, id, ts, sig string) {
		res, err := v.Verify(verify.Request{Body: body, Header: swHeaders(swHeaderPrefix, id, ts, sig), Now: swNow})
		if err != nil {
			return
		}
		want := "v1," + base64.StdEncoding.EncodeToString(mac(sha256.New, key, id+"."+ts+"."+string(body)))
		if !containsField(strings.Split(sig, " "), want, false) {
			t.Fatalf("accepted signature %q that does not match the body", sig)
		}
		if res.DeliveryID != id || !res.DeliveryIDSigned {
			t.Fatalf("unexpected result %+v", res)
		}
	})
}

func FuzzGitHub(f *testing.F) {
	v, err := verify.New(verify.Config{Scheme: verify.SchemeGitHub, Secrets: secrets(ghSecret)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(ghPayload), "sha256="+ghSignature)
	f.Add([]byte(ghPayload), "sha256="+strings.ToUpper(ghSignature))
	f.Add([]byte("Hello, World?"), "sha256="+ghSignature)
	f.Fuzz(func(t *testing.T, body []byte, sig string) {
		if _, err := v.Verify(verify.Request{Body: body, Header: header("X-Hub-Signature-256", sig)}); err != nil {
			return
		}
		want := "sha256=" + hex.EncodeToString(mac(sha256.New, []byte(ghSecret), string(body)))
		if !containsField([]string{sig}, want, true) {
			t.Fatalf("accepted signature %q that does not match the body", sig)
		}
	})
}

func FuzzStripe(f *testing.F) {
	v, err := verify.New(verify.Config{Scheme: verify.SchemeStripe, Secrets: secrets(stripeSecret)})
	if err != nil {
		f.Fatal(err)
	}
	ts := "1492774577"
	sig := stripeSig(stripeSecret, ts, stripePayload)
	f.Add([]byte(stripePayload), "t="+ts+",v1="+sig)
	f.Add([]byte(stripePayload), "t="+ts+",v1=bad,v0="+sig+",v1="+sig)
	f.Add([]byte(stripePayload), "v1,t=1")
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		if _, err := v.Verify(verify.Request{Body: body, Header: headerOf("Stripe-Signature", header), Now: stripeNow}); err != nil {
			return
		}
		items := strings.Split(header, ",")
		var rawTS string
		for _, it := range items {
			if after, ok := strings.CutPrefix(it, "t="); ok {
				rawTS = after
			}
		}
		want := "v1=" + hex.EncodeToString(mac(sha256.New, []byte(stripeSecret), rawTS+"."+string(body)))
		if !containsField(items, want, true) {
			t.Fatalf("accepted header %q that does not match the body", header)
		}
	})
}

func FuzzSlack(f *testing.F) {
	v, err := verify.New(verify.Config{Scheme: verify.SchemeSlack, Secrets: secrets(slackSecret)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(slackBody), slackTimestamp, "v0="+slackSignature)
	f.Add([]byte(slackBody), "1531420619", "v0="+slackSignature)
	f.Fuzz(func(t *testing.T, body []byte, ts, sig string) {
		if _, err := v.Verify(verify.Request{Body: body, Header: slackHeaders(ts, sig), Now: slackNow}); err != nil {
			return
		}
		want := "v0=" + hex.EncodeToString(mac(sha256.New, []byte(slackSecret), "v0:"+ts+":"+string(body)))
		if !containsField([]string{sig}, want, true) {
			t.Fatalf("accepted signature %q that does not match the body", sig)
		}
	})
}

func FuzzShopify(f *testing.F) {
	v, err := verify.New(verify.Config{Scheme: verify.SchemeShopify, Secrets: secrets(shopifySecret)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(shopifyPayload), macSHA256B64([]byte(shopifySecret), shopifyPayload))
	f.Add([]byte(shopifyPayload), "")
	f.Fuzz(func(t *testing.T, body []byte, sig string) {
		if _, err := v.Verify(verify.Request{Body: body, Header: header("X-Shopify-Hmac-Sha256", sig)}); err != nil {
			return
		}
		if want := macSHA256B64([]byte(shopifySecret), string(body)); sig != want {
			t.Fatalf("accepted signature %q that does not match the body", sig)
		}
	})
}

func FuzzGenericHMAC(f *testing.F) {
	v, err := verify.New(verify.Config{
		Scheme: verify.SchemeHMAC, Secrets: secrets(hmacSecret),
		Header: "X-Signature", Algorithm: "sha512", Encoding: "base64", Prefix: "sha512=",
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(hmacPayload), "sha512="+macSHA512B64([]byte(hmacSecret), hmacPayload))
	f.Add([]byte(hmacPayload), "sha512=")
	f.Fuzz(func(t *testing.T, body []byte, sig string) {
		if _, err := v.Verify(verify.Request{Body: body, Header: header("X-Signature", sig)}); err != nil {
			return
		}
		want := "sha512=" + base64.StdEncoding.EncodeToString(mac(sha512.New, []byte(hmacSecret), string(body)))
		if sig != want {
			t.Fatalf("accepted signature %q that does not match the body", sig)
		}
	})
}

func FuzzCredentials(f *testing.F) {
	bearer, err := verify.New(verify.Config{Scheme: verify.SchemeBearer, SecretHashes: [][]byte{sha256Sum(bearerToken)}})
	if err != nil {
		f.Fatal(err)
	}
	basic, err := verify.New(verify.Config{Scheme: verify.SchemeBasic, SecretHashes: [][]byte{sha256Sum(basicPair)}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("Bearer " + bearerToken)
	f.Add("Basic " + basicB64)
	f.Add("Basic " + bearerToken)
	f.Fuzz(func(t *testing.T, auth string) {
		h := header("Authorization", auth)
		if _, err := bearer.Verify(verify.Request{Header: h}); err == nil {
			scheme, token, _ := strings.Cut(auth, " ")
			if !strings.EqualFold(scheme, "bearer") || token != bearerToken {
				t.Fatalf("accepted bearer credential %q", auth)
			}
		}
		if _, err := basic.Verify(verify.Request{Header: h}); err == nil {
			scheme, encoded, _ := strings.Cut(auth, " ")
			decoded, decErr := base64.StdEncoding.DecodeString(encoded)
			if !strings.EqualFold(scheme, "basic") || decErr != nil || string(decoded) != basicPair {
				t.Fatalf("accepted basic credential %q", auth)
			}
		}
	})
}

// containsField reports whether want is one of fields; hex is compared
// case-insensitively because upper-case hex denotes the same MAC bytes.
func containsField(fields []string, want string, foldCase bool) bool {
	for _, f := range fields {
		if f == want || foldCase && strings.EqualFold(f, want) {
			return true
		}
	}
	return false
}

// headerOf sets a header even when value is empty, so fuzzers can reach the
// empty-value path.
func headerOf(name, value string) map[string][]string {
	return map[string][]string{name: {value}}
}
