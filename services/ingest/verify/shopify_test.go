package verify_test

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// Shopify's "Verify webhooks" documentation describes the algorithm
// (base64(HMAC-SHA256(client secret, raw body))) but publishes no fixed
// vector, so this one is computed independently here with crypto/hmac.
const (
	shopifySecret    = "hush-shopify-client-secret"
	shopifyPayload   = `{"id":820982911946154508,"email":"jon@example.com","topic":"orders/create"}`
	shopifyWebhookID = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"
)

func TestShopify(t *testing.T) {
	t.Parallel()
	sig := macSHA256B64([]byte(shopifySecret), shopifyPayload)
	tests := []struct {
		name    string
		secrets []string
		header  http.Header
		body    string
		ok      bool
	}{
		{name: "signature", ok: true},
		{name: "rotation: second secret matches", ok: true, secrets: []string{"previous", shopifySecret}},
		{name: "empty signature", header: header("X-Shopify-Hmac-Sha256", "")},
		{name: "truncated signature", header: header("X-Shopify-Hmac-Sha256", sig[:len(sig)-4])},
		{name: "unpadded signature", header: header("X-Shopify-Hmac-Sha256", sig[:len(sig)-1])},
		{name: "hex instead of base64", header: header("X-Shopify-Hmac-Sha256", macSHA256Hex([]byte(shopifySecret), shopifyPayload))},
		{name: "sha512 length", header: header("X-Shopify-Hmac-Sha256", base64.StdEncoding.EncodeToString(make([]byte, 64)))},
		{name: "flipped bit in signature", header: header("X-Shopify-Hmac-Sha256", flipB64(t, sig))},
		{name: "flipped bit in body", body: string(flipBody(shopifyPayload))},
		{name: "wrong secret", secrets: []string{"another secret"}},
		{name: "missing header", header: header("X-Shopify-Webhook-Id", shopifyWebhookID)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.secrets == nil {
				tc.secrets = []string{shopifySecret}
			}
			if tc.header == nil {
				tc.header = header("X-Shopify-Hmac-Sha256", sig, "X-Shopify-Webhook-Id", shopifyWebhookID)
			}
			if tc.body == "" {
				tc.body = shopifyPayload
			}
			v := mustNew(t, verify.Config{Scheme: verify.SchemeShopify, Secrets: secrets(tc.secrets...)})
			res, err := v.Verify(verify.Request{Body: []byte(tc.body), Header: tc.header})
			if !tc.ok {
				requireUnverified(t, err, shopifySecret, sig)
				return
			}
			require.NoError(t, err)
			require.Equal(t, verify.Result{Scheme: verify.SchemeShopify, DeliveryID: shopifyWebhookID}, res)
		})
	}
}
