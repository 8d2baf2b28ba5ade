-- Twilio (issue 16): the 'twilio' verification scheme, and the public URL an
-- endpoint is reached at.
--
-- Twilio signs the URL it requested. A node behind a proxy or load balancer
-- sees another one (its own host, http), so the endpoint can name the URL as
-- configured at the sender: public_url, an absolute http(s) URL without a
-- query (the request's query is appended as received); NULL means derive it
-- from the request. Only the length and the scheme are checked here; the
-- sources package refuses a query, fragment or credentials before writing.
--
-- endpoints_verification_check is written with the full list of issue 16's
-- schemes ('zoom', 'meta', 'x', 'msgraph' come with the handshakes), so
-- whichever of its migrations runs last leaves the same list. The
-- constraint is rebuilt without a table rewrite; its check scans endpoints,
-- a small table.

-- +goose Up

ALTER TABLE endpoints
    DROP CONSTRAINT endpoints_verification_check,
    ADD CONSTRAINT endpoints_verification_check CHECK (verification IN (
        'none', 'standard_webhooks', 'github', 'stripe', 'slack', 'shopify', 'hmac', 'bearer', 'basic',
        'zoom', 'meta', 'x', 'msgraph', 'twilio'
    )),
    ADD COLUMN public_url text,
    ADD CONSTRAINT endpoints_public_url_check CHECK (
        char_length(public_url) <= 2048 AND public_url ~ '^https?://[^/?#]'
    );

-- +goose Down

-- Removes what Up added: an endpoint that verifies with 'twilio' makes the
-- constraint fail, so the downgrade refuses rather than keep an endpoint the
-- older code cannot verify.
ALTER TABLE endpoints
    DROP CONSTRAINT endpoints_public_url_check,
    DROP COLUMN public_url,
    DROP CONSTRAINT endpoints_verification_check,
    ADD CONSTRAINT endpoints_verification_check CHECK (verification IN (
        'none', 'standard_webhooks', 'github', 'stripe', 'slack', 'shopify', 'hmac', 'bearer', 'basic',
        'zoom', 'meta', 'x', 'msgraph'
    ));
