package web

// SetProvider lets the tests play the OpenID provider (a fake of
// providerFlows), as New does with the application's.
func (p *Pages) SetProvider(f providerFlows) { p.provider = f }
