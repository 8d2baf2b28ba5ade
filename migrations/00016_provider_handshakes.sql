-- Verification schemes of providers with a URL handshake (issue 16): Zoom,
-- Meta (Facebook, Instagram, WhatsApp), X (Account Activity API) and
-- Microsoft Graph; 'twilio' is allowed here too, so the scheme list is
-- written once for both (Twilio's verifier arrives separately).
--
-- verify_token_sha256 is Meta's second credential: the verify token the
-- owner chose and gave Meta, which Meta's subscription handshake (GET
-- ?hub.verify_token=…) presents. It is only ever compared, so only its
-- SHA-256 is kept (like bearer tokens in endpoint_secrets); set exactly
-- for 'meta' endpoints. No existing row is 'meta' and the new column is NULL
-- in all of them, so both CHECKs hold for every existing row (the ALTER's
-- validation scan of endpoints, a small table, is all it costs).

-- +goose Up

ALTER TABLE endpoints
    DROP CONSTRAINT endpoints_verification_check,
    ADD CONSTRAINT endpoints_verification_check CHECK (verification IN (
        'none', 'standard_webhooks', 'github', 'stripe', 'slack', 'shopify', 'hmac', 'bearer', 'basic',
        'zoom', 'meta', 'x', 'msgraph', 'twilio'
    )),
    ADD COLUMN verify_token_sha256 bytea,
    ADD CONSTRAINT endpoints_verify_token_check CHECK (
        CASE WHEN verification = 'meta'
             THEN verify_token_sha256 IS NOT NULL AND octet_length(verify_token_sha256) = 32
             ELSE verify_token_sha256 IS NULL
        END
    );

-- +goose Down

-- An endpoint of a scheme the old list lacks makes the ADD CONSTRAINT fail:
-- the downgrade refuses rather than silently changing how it verifies.
ALTER TABLE endpoints
    DROP CONSTRAINT endpoints_verify_token_check,
    DROP COLUMN verify_token_sha256,
    DROP CONSTRAINT endpoints_verification_check,
    ADD CONSTRAINT endpoints_verification_check CHECK (verification IN (
        'none', 'standard_webhooks', 'github', 'stripe', 'slack', 'shopify', 'hmac', 'bearer', 'basic'
    ));
