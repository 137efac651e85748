package application

// FederationService signs people in through other identity providers
// (contract-identity.md, section 2): the browser flow's start and
// callback, the matching of an identity to an account, the links of
// identities to accounts and their removal.
type FederationService struct {
	core
	identityPorts
}
