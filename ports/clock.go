package ports

import "time"

// Clock tells the time; tests use a fixed one.
type Clock interface {
	Now() time.Time
}
