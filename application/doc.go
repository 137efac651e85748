// Package application holds userd's use cases: registration, reads, lists,
// updates, deletion, login, refresh and logout. Every authorization rule of
// the contract lives here, expressed over domain types and ports only, so it
// is tested with the in-memory adapters and holds whatever drives it.
package application
