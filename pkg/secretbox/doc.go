// Package secretbox encrypts small secrets at rest, such as webhook endpoint
// HMAC keys, which must be recoverable (to verify signatures) and so cannot be
// hashed.
//
// Secrets are sealed with AES-256-GCM under a master key taken from
// configuration. Each sealed value is nonce||ciphertext||tag with a fresh
// random 12-byte nonce, and the caller stores it next to the id of the key
// that sealed it. Additional authenticated data (typically the owning row's
// id) binds a ciphertext to its row, so copying it to another row makes it
// fail to open instead of silently lending one endpoint's secret to another.
//
// # Rotation
//
// A [Keyring] holds several master keys; the first entry of the configuration
// value is the primary. [Keyring.Seal] always uses the primary, while
// [Keyring.Open] accepts any key in the ring. To rotate:
//
//  1. Generate a key ([GenerateKey]) and put it first in the configuration,
//     keeping the old key after it: "k2:NEW...,k1:OLD...".
//  2. New secrets are now sealed under k2; old ciphertexts still open under
//     k1. Re-seal rows for which [Keyring.NeedsReseal] reports true (on read,
//     or with a background sweep).
//  3. Once no row references k1, drop it from the configuration.
//
// A ciphertext whose key id is no longer in the ring fails with [ErrOpen].
package secretbox
