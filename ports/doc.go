// Package ports declares the interfaces the application needs from the
// outside world (the driven side of the hexagon): storage, password hashing,
// token signing, key management, metrics and time. Adapters implement them;
// the application depends on nothing else.
//
// The store ports join the transaction of their context when there is one
// (Transactor), so that a change and what it causes are written together.
//
// Each port lives in a file of its own with the types it takes and
// returns, and each method's doc comment names the domain errors its
// adapters may return. Any other error is unexpected: the driving side
// answers it as an internal failure.
package ports
