package domain

import "strconv"

// Page sizes of every list: users and the audit trail alike.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 200
)

// Page selects one page of a list ordered by id: at most Limit items,
// those whose id sorts after After (from the start when After is empty).
type Page[ID ~string] struct {
	After ID
	Limit int
}

// PageError rejects a page request: Bound is "limit" or "after".
type PageError struct {
	Bound  string
	Reason string
}

func (e *PageError) Error() string { return "invalid page " + e.Bound + ": " + e.Reason }

// ParsePage reads a page request as a client wrote it. An empty limit is
// DefaultPageLimit, anything else must be an integer from 1 to
// MaxPageLimit; an empty after starts at the beginning, anything else must
// be an id that parseID accepts (what names such an id, e.g. "a user id",
// for the message).
func ParsePage[ID ~string](limit, after string, what string, parseID func(string) (ID, error)) (Page[ID], error) {
	p := Page[ID]{Limit: DefaultPageLimit}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > MaxPageLimit {
			return Page[ID]{}, &PageError{Bound: "limit",
				Reason: "must be an integer between 1 and " + strconv.Itoa(MaxPageLimit)}
		}
		p.Limit = n
	}
	if after != "" {
		id, err := parseID(after)
		if err != nil {
			return Page[ID]{}, &PageError{Bound: "after", Reason: "must be " + what}
		}
		p.After = id
	}
	return p, nil
}

// Probe is the page with one item more than asked for: fetching it tells
// whether a next page exists, without counting the rest.
func (p Page[ID]) Probe() Page[ID] {
	p.Limit++
	return p
}

// Paged is one page of a list: the items, the page that was asked for,
// and the cursor of the next page, empty on the last one.
type Paged[T any, ID ~string] struct {
	Items []T
	Page  Page[ID]
	Next  ID
}

// Cut turns the items fetched for p.Probe() into the page p: at most
// p.Limit items, and the id of the last one as the next cursor when more
// were found.
func Cut[T any, ID ~string](p Page[ID], fetched []T, idOf func(T) ID) Paged[T, ID] {
	out := Paged[T, ID]{Items: fetched, Page: p}
	if len(fetched) > p.Limit {
		out.Items = fetched[:p.Limit]
		out.Next = idOf(out.Items[p.Limit-1])
	}
	return out
}
