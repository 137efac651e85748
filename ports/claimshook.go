package ports

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// ClaimsHook asks the operator's claims hook (USERD_CLAIMS_HOOK_URL) for
// the extra claims of a token about to be signed. It is safe for
// concurrent use.
type ClaimsHook interface {
	// Claims asks once, within the hook's timeout. It returns the claims
	// (maybe none); *domain.SignInRefusedError when the hook refused (403
	// with a message); an error wrapping domain.ErrHookFailed when it
	// answered 200 wrongly (a *domain.HookFailure says why); an error
	// wrapping domain.ErrHookUnavailable for a timeout, a refused
	// connection or any other status.
	Claims(ctx context.Context, r domain.ClaimsRequest) (domain.HookClaims, error)
}

// Results of a call of the claims hook, as ClaimsHookMetrics counts them.
const (
	HookClaimsAnswered = "claims"
	HookRefused        = "refused"
	HookFailed         = "failed"
	HookUnavailable    = "unavailable"
)

// ClaimsHookMetrics counts the calls of the claims hook.
type ClaimsHookMetrics interface {
	// HookCalled records one call: its result (Hook…) and how long it
	// took.
	HookCalled(result string, took time.Duration)
}
