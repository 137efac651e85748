package memory

import (
	"slices"

	"github.com/userd/userd/domain"
)

// StoredSecret returns the secret of key id as the store keeps it, for the
// contract suite's checks of sealing.
func (r *KeyStore) StoredSecret(id string) []byte {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return slices.Clone(r.s.keys[id].Secret)
}

// SetStoredSecret overwrites the kept secret of key id.
func (r *KeyStore) SetStoredSecret(id string, stored []byte) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	k := r.s.keys[id]
	k.Secret = slices.Clone(stored)
	r.s.keys[id] = k
}

// StoredPayload returns the payload of message id as the store keeps it,
// for the contract suite's checks of sealing.
func (o *Outbox) StoredPayload(id domain.OutboxID) []byte {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	return slices.Clone(o.s.outbox[id].m.Payload)
}

// StoredTOTPSecret returns the user's TOTP secret as the store keeps it,
// for the contract suite's checks of sealing.
func (r *MFAStore) StoredTOTPSecret(user domain.UserID) []byte {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return slices.Clone(r.s.totp[user].Secret)
}

// SetStoredTOTPSecret overwrites the kept TOTP secret of the user.
func (r *MFAStore) SetStoredTOTPSecret(user domain.UserID, stored []byte) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	f := r.s.totp[user]
	f.Secret = slices.Clone(stored)
	r.s.totp[user] = f
}

// StoredClientSecret returns the provider's client secret as the store
// keeps it, for the contract suite's checks of sealing.
func (r *IdentityProviderStore) StoredClientSecret(slug string) []byte {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return []byte(r.s.providers[slug].ClientSecret)
}
