package httpapi

import (
	"encoding/json"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// Request DTOs. Pointer fields tell an absent field (nil) from an empty one;
// a JSON null counts as absent. Profiles is a slice: nil when absent or
// null, non-nil (possibly empty) when sent.

type loginRequest struct {
	Email    *string `json:"email"`
	Password *string `json:"password"`
}

// refreshRequest is the body of refresh and logout.
type refreshRequest struct {
	RefreshToken *string `json:"refreshToken"`
}

type createUserRequest struct {
	Name     *string  `json:"name"`
	Email    *string  `json:"email"`
	Password *string  `json:"password"`
	Profiles []string `json:"profiles"`
	// Role is the legacy single-role spelling of the original interface.
	Role *string `json:"role"`
	// Metadata and AppMetadata stay JSON for the domain to judge: nil when
	// absent, "null" for a JSON null (refused: it is no object). omitempty
	// keeps an absent one absent when a request is encoded again (nil
	// would become null).
	Metadata    rawJSON `json:"metadata,omitempty"`
	AppMetadata rawJSON `json:"appMetadata,omitempty"`
}

// updateUserRequest covers both update shapes of the original interface,
// {email,password} and {id,name,email,password,profiles}: whatever is
// present is replaced.
type updateUserRequest struct {
	ID              *string  `json:"id"`
	Name            *string  `json:"name"`
	Email           *string  `json:"email"`
	Password        *string  `json:"password"`
	Profiles        []string `json:"profiles"`
	EmailVerified   *bool    `json:"emailVerified"`
	Disabled        *bool    `json:"disabled"`
	CurrentPassword *string  `json:"currentPassword"`
	// Metadata and AppMetadata as in createUserRequest.
	Metadata    rawJSON `json:"metadata,omitempty"`
	AppMetadata rawJSON `json:"appMetadata,omitempty"`
}

// emailRequest asks for a link by mail.
type emailRequest struct {
	Email *string `json:"email"`
}

// tokenRequest uses a verification link's token.
type tokenRequest struct {
	Token *string `json:"token"`
}

// resetRequest uses a reset link's token to set a password.
type resetRequest struct {
	Token    *string `json:"token"`
	Password *string `json:"password"`
}

func (r createUserRequest) toInput() application.RegisterInput {
	return application.RegisterInput{
		Name:        deref(r.Name),
		Email:       deref(r.Email),
		Password:    deref(r.Password),
		Profiles:    r.Profiles,
		Role:        r.Role,
		Metadata:    r.Metadata,
		AppMetadata: r.AppMetadata,
	}
}

func (r updateUserRequest) toInput() application.UpdateInput {
	return application.UpdateInput{
		ID:              r.ID,
		Name:            r.Name,
		Email:           r.Email,
		Password:        r.Password,
		Profiles:        r.Profiles,
		EmailVerified:   r.EmailVerified,
		Disabled:        r.Disabled,
		CurrentPassword: r.CurrentPassword,
		Metadata:        r.Metadata,
		AppMetadata:     r.AppMetadata,
	}
}

// rawJSON is a JSON value of a request, kept in the form encoding/json
// writes it (compact, "<" as \u003c), so that a request decoded, encoded
// and decoded again holds the same bytes; its meaning is the domain's to
// judge (domain.ParseMetadata).
type rawJSON []byte

// UnmarshalJSON implements json.Unmarshaler; it is given a JSON null too.
func (v *rawJSON) UnmarshalJSON(b []byte) error {
	c, err := json.Marshal(json.RawMessage(b))
	if err != nil {
		return err
	}
	*v = c
	return nil
}

// MarshalJSON implements json.Marshaler: the value itself, null for nil.
func (v rawJSON) MarshalJSON() ([]byte, error) { return json.RawMessage(v).MarshalJSON() }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// userResponse is the user representation of the contract. It has no
// password field to leak from.
type userResponse struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Email         string          `json:"email"`
	Profiles      []string        `json:"profiles"`
	EmailVerified bool            `json:"emailVerified"`
	MFAEnabled    bool            `json:"mfaEnabled"`
	Disabled      bool            `json:"disabled"`
	Metadata      json.RawMessage `json:"metadata"`
	AppMetadata   json.RawMessage `json:"appMetadata"`
	CreatedAt     string          `json:"createdAt"`
	UpdatedAt     string          `json:"updatedAt"`
}

func toUserResponse(u domain.User) userResponse {
	return userResponse{
		ID:            u.ID.String(),
		Name:          u.Name,
		Email:         u.Email.String(),
		Profiles:      u.Profiles.Strings(),
		EmailVerified: u.EmailVerified,
		MFAEnabled:    u.MFAEnabled,
		Disabled:      u.Disabled,
		Metadata:      u.Metadata.JSON(),
		AppMetadata:   u.AppMetadata.JSON(),
		CreatedAt:     formatTime(u.CreatedAt),
		UpdatedAt:     formatTime(u.UpdatedAt),
	}
}

func toUserResponses(users []domain.User) []userResponse {
	out := make([]userResponse, len(users))
	for i, u := range users {
		out[i] = toUserResponse(u)
	}
	return out
}

// formatTime renders RFC 3339 in UTC with whole seconds: stores differ in
// the precision they keep, and clients need no more.
func formatTime(t time.Time) string {
	var buf [32]byte // "2006-01-02T15:04:05Z" and room for a longer year
	return string(appendTime(buf[:0], t))
}

// appendTime appends formatTime's rendering of t to dst (for
// appendUserJSON, which writes the answer's bytes itself).
func appendTime(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, time.RFC3339)
}

type tokenResponse struct {
	AccessToken string `json:"accessToken"`
	TokenType   string `json:"tokenType"`
	ExpiresIn   int64  `json:"expiresIn"`
	// RefreshToken is left out when the refresh cookie carries it.
	RefreshToken     string       `json:"refreshToken,omitempty"`
	RefreshExpiresIn int64        `json:"refreshExpiresIn"`
	User             userResponse `json:"user"`
}

func toTokenResponse(p application.TokenPair, now time.Time) tokenResponse {
	return tokenResponse{
		AccessToken:      p.Access.Token,
		TokenType:        "Bearer",
		ExpiresIn:        secondsUntil(p.Access.ExpiresAt, now),
		RefreshToken:     p.RefreshToken,
		RefreshExpiresIn: secondsUntil(p.RefreshExpiresAt, now),
		User:             toUserResponse(p.User),
	}
}

// secondsUntil rounds up to whole seconds: token expiries are whole
// seconds (the JWT exp claim) computed from a now with a fraction, so a
// 900 s token issued at 12:00:00.7 expires 899.3 s later and reads 900, as
// a client expects. The half second over is far inside the 30 s leeway.
// Never negative.
func secondsUntil(t, now time.Time) int64 {
	d := t.Sub(now)
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return max(s, 0)
}
