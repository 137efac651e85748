package domain_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

func TestParsePage(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("a", 24)
	for _, tc := range []struct {
		name, limit, after string
		want               domain.Page[domain.UserID]
		wantBound          string
	}{
		{name: "defaults", want: domain.Page[domain.UserID]{Limit: domain.DefaultPageLimit}},
		{name: "limit_and_cursor", limit: "7", after: id, want: domain.Page[domain.UserID]{Limit: 7, After: domain.UserID(id)}},
		{name: "smallest", limit: "1", want: domain.Page[domain.UserID]{Limit: 1}},
		{name: "largest", limit: "200", want: domain.Page[domain.UserID]{Limit: 200}},
		{name: "zero", limit: "0", wantBound: "limit"},
		{name: "negative", limit: "-1", wantBound: "limit"},
		{name: "too_big", limit: "201", wantBound: "limit"},
		{name: "not_a_number", limit: "ten", wantBound: "limit"},
		{name: "bad_cursor", after: "zz", wantBound: "after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := domain.ParsePage(tc.limit, tc.after, "a user id", domain.ParseUserID)
			if tc.wantBound != "" {
				var perr *domain.PageError
				if !errors.As(err, &perr) || perr.Bound != tc.wantBound {
					t.Fatalf("error %v, want a page error about %s", err, tc.wantBound)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParsePage = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	_, err := domain.ParsePage("", "zz", "a user id", domain.ParseUserID)
	if !strings.Contains(err.Error(), "must be a user id") {
		t.Errorf("cursor error %q does not say what a cursor is", err)
	}
}

func TestCut(t *testing.T) {
	t.Parallel()
	ids := []domain.UserID{"a", "b", "c", "d"}
	self := func(id domain.UserID) domain.UserID { return id }
	page := domain.Page[domain.UserID]{Limit: 3}
	if p := page.Probe(); p.Limit != 4 {
		t.Fatalf("probe limit %d, want 4", p.Limit)
	}
	got := domain.Cut(page, ids, self)
	if !slices.Equal(got.Items, ids[:3]) || got.Next != "c" || got.Page != page {
		t.Errorf("more than a page: %+v", got)
	}
	got = domain.Cut(page, ids[:3], self)
	if !slices.Equal(got.Items, ids[:3]) || got.Next != "" {
		t.Errorf("exactly a page: %+v", got)
	}
	got = domain.Cut(page, nil, self)
	if len(got.Items) != 0 || got.Next != "" {
		t.Errorf("empty: %+v", got)
	}
}
