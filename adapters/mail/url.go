package mail

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// TLSMode is how a connection to the SMTP server is encrypted.
type TLSMode string

// The TLS modes of USERD_SMTP_URL.
const (
	// TLSRequired (smtp://) upgrades the connection with STARTTLS, and
	// sends nothing to a server that does not offer it.
	TLSRequired TLSMode = "required"
	// TLSOpportunistic (smtp://…?tls=opportunistic) upgrades with STARTTLS
	// when the server offers it, and goes on in plain text when it does
	// not; a man in the middle can strip the offer.
	TLSOpportunistic TLSMode = "opportunistic"
	// TLSNone (smtp://…?tls=none) never encrypts: for a relay on the same
	// host or a trusted network, and for tests.
	TLSNone TLSMode = "none"
	// TLSImplicit (smtps://) speaks TLS from the first byte (RFC 8314).
	TLSImplicit TLSMode = "implicit"
)

// Default ports: submission with STARTTLS (RFC 6409) and submissions
// (RFC 8314).
const (
	DefaultSMTPPort  = 587
	DefaultSMTPSPort = 465
)

// Server is a parsed USERD_SMTP_URL.
type Server struct {
	Host string
	Port int
	// Username and Password, when Username is set, authenticate with
	// AUTH PLAIN or LOGIN (go-mail picks what the server offers).
	Username string
	Password string
	TLS      TLSMode
}

// Address is host:port.
func (s Server) Address() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// String is the URL without the password, for logs and errors.
func (s Server) String() string {
	u := url.URL{Scheme: "smtp", Host: s.Address()}
	if s.TLS == TLSImplicit {
		u.Scheme = "smtps"
	}
	if s.Username != "" {
		u.User = url.User(s.Username)
	}
	if s.TLS == TLSNone || s.TLS == TLSOpportunistic {
		u.RawQuery = "tls=" + string(s.TLS)
	}
	return u.String()
}

// errURLForm says what a USERD_SMTP_URL looks like. Parse errors never
// quote the URL: it may hold a password.
var errURLForm = errors.New("not a URL like smtp://[user:pass@]host:port[?tls=none|opportunistic] or smtps://[user:pass@]host:port")

// ParseSMTPURL parses a USERD_SMTP_URL: smtp://[user:pass@]host[:port]
// with STARTTLS required, unless ?tls=none (plain text) or
// ?tls=opportunistic (STARTTLS when offered); smtps://[user:pass@]host[:port]
// for implicit TLS. The port defaults to DefaultSMTPPort or
// DefaultSMTPSPort. Its errors never show the password.
func ParseSMTPURL(raw string) (Server, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		// url.Error quotes the input, password and all.
		return Server{}, errURLForm
	}
	var s Server
	switch u.Scheme {
	case "smtp":
		s.TLS, s.Port = TLSRequired, DefaultSMTPPort
	case "smtps":
		s.TLS, s.Port = TLSImplicit, DefaultSMTPSPort
	default:
		return Server{}, fmt.Errorf("the scheme must be smtp or smtps, not %q", u.Scheme)
	}
	s.Host = u.Hostname()
	if s.Host == "" {
		return Server{}, fmt.Errorf("no host: %w", errURLForm)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Server{}, fmt.Errorf("port %q is not 1 to 65535", p)
		}
		s.Port = n
	} else if strings.HasSuffix(u.Host, ":") {
		return Server{}, fmt.Errorf("empty port: %w", errURLForm)
	}
	if (u.Path != "" && u.Path != "/") || u.Fragment != "" {
		return Server{}, fmt.Errorf("a path or fragment has no meaning: %w", errURLForm)
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
		if s.Username == "" || s.Password == "" {
			return Server{}, errors.New("give both a user and a password (percent-encoded), or neither")
		}
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Server{}, fmt.Errorf("the query: %w", errURLForm)
	}
	for key, values := range q {
		if key != "tls" {
			return Server{}, fmt.Errorf("unknown parameter %q: only tls is known", key)
		}
		if len(values) != 1 {
			return Server{}, errors.New("tls given more than once")
		}
		switch mode := TLSMode(values[0]); {
		case s.TLS == TLSImplicit:
			return Server{}, fmt.Errorf("tls=%s does not go with smtps://, which is always TLS", values[0])
		case mode == TLSNone || mode == TLSOpportunistic || mode == TLSRequired:
			s.TLS = mode
		default:
			return Server{}, fmt.Errorf("tls=%q is not none, opportunistic or required", values[0])
		}
	}
	return s, nil
}
