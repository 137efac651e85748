package web

// SetProvider lets the tests play the OpenID provider (a fake of
// providerFlows), as New does with the application's.
func (p *Pages) SetProvider(f providerFlows) { p.provider = f }

// IdentityLinkedPath is the page that the federation flow ends on once it
// has linked an identity (identityLinkedPath).
var IdentityLinkedPath = identityLinkedPath
