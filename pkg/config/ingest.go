package config

import (
	"fmt"

	"github.com/switchboard/switchboard/pkg/secretbox"
)

// EnvSealingKeys names the keyring that seals recoverable secrets at rest.
const EnvSealingKeys = "SWITCHBOARD_SEALING_KEYS"

// Ingest configures the ingest service.
type Ingest struct {
	// SealingKeys seals the webhook secrets that verification needs back
	// (HMAC keys): SWITCHBOARD_SEALING_KEYS, "id:base64key,…" with 32-byte
	// keys; the first seals, every one opens (rotation: put a new key
	// first, re-seal, then drop the old one). Every node needs the same
	// value. DevSealingKeys is true when it was not set and the public
	// development keyring is used.
	SealingKeys    *secretbox.Keyring
	DevSealingKeys bool
	// AdapterAllow is where pull adapters may connect
	// (SWITCHBOARD_ADAPTER_ALLOW, see EnvAdapterAllow); empty allows nothing.
	AdapterAllow []AdapterAllowEntry
}

// devSealingKeys is used when SWITCHBOARD_SEALING_KEYS is unset, so
// `make run` works out of the box. It is public: production must set its own.
const devSealingKeys = "dev:c3dpdGNoYm9hcmQgZGV2ZWxvcG1lbnQga2V5cmluZyE="

func defaultIngest() Ingest {
	k, err := secretbox.ParseKeyring(devSealingKeys)
	if err != nil {
		panic("config: the development sealing keyring does not parse: " + err.Error())
	}
	return Ingest{SealingKeys: k, DevSealingKeys: true}
}

// sealingKeys parses the keyring; its errors never contain key material.
func (p *parser) sealingKeys(name string, dst *Ingest) {
	if k, ok := parse(p, name, secretbox.ParseKeyring, func(_ string, err error) error {
		return fmt.Errorf("%s: %w (entries are id:base64key with 32-byte keys, the first seals; try: k1:$(openssl rand -base64 32))", name, err)
	}); ok {
		dst.SealingKeys, dst.DevSealingKeys = k, false
	}
}
