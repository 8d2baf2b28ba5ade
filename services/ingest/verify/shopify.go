package verify

import "crypto/sha256"

// shopifyVerifier checks X-Shopify-Hmac-Sha256, a base64 HMAC-SHA256 of the
// body. Shopify signs nothing else, so the webhook id is reported unsigned.
type shopifyVerifier struct{ secrets [][]byte }

func (v shopifyVerifier) Verify(r Request) (Result, error) {
	header, err := singleHeader(r.Header, "X-Shopify-Hmac-Sha256")
	if err != nil {
		return Result{}, err
	}
	sig, err := strictBase64.DecodeString(header)
	if err != nil || len(sig) != sha256.Size {
		return Result{}, unverified("shopify: malformed signature")
	}
	if err := sha256Matches("shopify", v.secrets, sig, r.Body); err != nil {
		return Result{}, err
	}
	return Result{Scheme: SchemeShopify, DeliveryID: r.Header.Get("X-Shopify-Webhook-Id")}, nil
}
