package application_test

import "github.com/userd/userd/adapters/secretbox"

// testBox seals the keys of the tests' memory stores. One for all, so that
// the nodes of a test sharing a store share its key, as nodes do.
var testBox = func() *secretbox.Box {
	b, err := secretbox.New(secretbox.NewKey())
	if err != nil {
		panic(err)
	}
	return b
}()
