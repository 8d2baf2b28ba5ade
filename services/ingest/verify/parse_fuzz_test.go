package verify

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"testing"
)

// Parser fuzz targets: whatever the input, parsers must not panic and must
// only ever return signatures of the exact length their version implies.

func FuzzParseStandardSignatures(f *testing.F) {
	// Seeds from standard-webhooks/standard-webhooks libraries/go tests.
	f.Add("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	f.Add("v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=")
	f.Add("v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==")
	f.Add("v1a,")
	f.Fuzz(func(t *testing.T, header string) {
		sigs, err := parseStandardSignatures(header)
		if err != nil {
			if !errors.Is(err, ErrUnverified) {
				t.Fatalf("error %v does not wrap ErrUnverified", err)
			}
			return
		}
		if len(sigs) > maxSignatures {
			t.Fatalf("%d signatures returned", len(sigs))
		}
		for _, s := range sigs {
			switch {
			case s.version == "v1" && len(s.sig) == sha256.Size:
			case s.version == "v1a" && len(s.sig) == ed25519.SignatureSize:
			default:
				t.Fatalf("unexpected signature %q/%d", s.version, len(s.sig))
			}
		}
	})
}

func FuzzParseStripeSignature(f *testing.F) {
	f.Add("t=1492774577,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd,v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39")
	f.Add("v1,t=1")
	f.Add("t=")
	f.Fuzz(func(t *testing.T, header string) {
		h, err := parseStripeSignature(header)
		if err != nil {
			if !errors.Is(err, ErrUnverified) {
				t.Fatalf("error %v does not wrap ErrUnverified", err)
			}
			return
		}
		if h.rawTS == "" || len(h.v1) == 0 {
			t.Fatalf("incomplete header accepted: %+v", h)
		}
		for _, s := range h.v1 {
			if len(s) != sha256.Size {
				t.Fatalf("v1 of length %d", len(s))
			}
		}
	})
}

func FuzzParseUnix(f *testing.F) {
	f.Add("1614265330")
	f.Add("-1")
	f.Add("999999999999999")
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := parseUnix(s)
		if err != nil {
			return
		}
		for i := range len(s) {
			if s[i] < '0' || s[i] > '9' {
				t.Fatalf("accepted non-digit timestamp %q", s)
			}
		}
		if ts.Unix() < 0 {
			t.Fatalf("negative time from %q", s)
		}
	})
}
