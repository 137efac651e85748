// Command softauthn-server stands in for a browser and its passkey
// authenticator where a test client cannot sign (the Postman collection
// run by newman): it answers, over HTTP, what navigator.credentials.create
// and get, then credential.toJSON(), give a page, with the software
// authenticator of test/softauthn. It is a test tool: it keeps its keys
// in memory and listens on a loopback address.
//
//	POST /create {"origin","publicKey"}                  → RegistrationResponseJSON
//	POST /get    {"origin","publicKey"[,"credentialId"]} → AuthenticationResponseJSON
//
// origin is the page's origin (scheme://host[:port]), written into the
// client data; publicKey is the options userd answered, as they come;
// credentialId (base64url) picks the passkey in a discoverable login, as
// the user does in the browser's list. Each origin has an authenticator
// of its own. A ceremony the authenticator refuses is a 400 with the
// browser's error name (NotAllowedError, InvalidStateError, …) in the
// text.
//
// It prints "softauthn-server listening on http://ADDR" once it listens
// (-addr 127.0.0.1:0 picks a free port) and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/userd/userd/test/softauthn"
)

// request is the body of /create and /get.
type request struct {
	Origin       string          `json:"origin"`
	PublicKey    json.RawMessage `json:"publicKey"`
	CredentialID string          `json:"credentialId"`
}

// server holds one authenticator per origin.
type server struct {
	mu    sync.Mutex
	authn map[string]*softauthn.Authenticator
}

func (s *server) authenticator(origin string) *softauthn.Authenticator {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.authn[origin]
	if !ok {
		a = softauthn.New(origin)
		s.authn[origin] = a
	}
	return a
}

// ceremony serves one of the two routes: do runs it on the origin's
// authenticator.
func (s *server) ceremony(do func(a *softauthn.Authenticator, publicKey json.RawMessage, f softauthn.Faults) (json.RawMessage, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req request
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if req.Origin == "" || len(req.PublicKey) == 0 {
			http.Error(w, "body: origin and publicKey are required", http.StatusBadRequest)
			return
		}
		var f softauthn.Faults
		if req.CredentialID != "" {
			id, err := base64.RawURLEncoding.DecodeString(req.CredentialID)
			if err != nil {
				http.Error(w, "credentialId: not base64url: "+err.Error(), http.StatusBadRequest)
				return
			}
			f.Credential = id
		}
		cred, err := do(s.authenticator(req.Origin), req.PublicKey, f)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(cred) // a client that went away has nothing to read
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (port 0: a free one)")
	flag.Parse()
	if err := run(*addr); err != nil {
		log.Fatal(err)
	}
}

func run(addr string) error {
	s := &server{authn: map[string]*softauthn.Authenticator{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /create", s.ceremony((*softauthn.Authenticator).Create))
	mux.HandleFunc("POST /get", s.ceremony((*softauthn.Authenticator).Get))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	fmt.Printf("softauthn-server listening on http://%s\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
