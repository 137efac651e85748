package contract

import (
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// listEmailPrefix is the contract of UserListQuery.EmailPrefix: the users
// whose email starts with the prefix, in id order, paged by the cursor,
// with no character of the prefix a wildcard.
func listEmailPrefix(t *testing.T, newRepo func(t *testing.T) ports.UserRepository) {
	// store creates a user for each email, a minute apart, and returns
	// them by email.
	store := func(t *testing.T, repo ports.UserRepository, emails ...string) map[string]domain.User {
		t.Helper()
		byEmail := make(map[string]domain.User, len(emails))
		for i, email := range emails {
			u := newUser(at(time.Duration(i) * time.Minute))
			u.Email = domain.Email(email)
			mustCreate(t, repo, u)
			byEmail[email] = u
		}
		return byEmail
	}
	list := func(t *testing.T, repo ports.UserRepository, q ports.UserListQuery) []domain.User {
		t.Helper()
		got, err := repo.List(t.Context(), q)
		if err != nil {
			t.Fatalf("List(%+v): %v", q, err)
		}
		return got
	}

	t.Run("list_email_prefix", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		// The backslash is no part of an email userd accepts; the store
		// must compare it literally all the same.
		users := store(t, repo, "ada@example.com", "bob@example.com", "ada.king@example.com", "adam@example.org",
			"a%b@example.com", "axb@example.com", "a_c@example.com", "abc@example.com", `back\slash@example.com`)
		for _, tc := range []struct {
			prefix string
			want   []string
		}{
			{"ada", []string{"ada@example.com", "ada.king@example.com", "adam@example.org"}},
			{"ada@", []string{"ada@example.com"}},
			{"ada@example.com", []string{"ada@example.com"}},
			{"ada@example.com.", nil},
			{"ada@example.com ", nil},
			{"b", []string{"bob@example.com", `back\slash@example.com`}},
			{"zed", nil},
			// LIKE's wildcards and escape character match themselves.
			{"a%", []string{"a%b@example.com"}},
			{"%", nil},
			{"a_", []string{"a_c@example.com"}},
			{"_", nil},
			{`back\`, []string{`back\slash@example.com`}},
			{`back\s`, []string{`back\slash@example.com`}},
			{`\`, nil},
			{`a\%`, nil},
		} {
			got := list(t, repo, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 50}, EmailPrefix: tc.prefix})
			var want []domain.UserID
			for _, email := range tc.want {
				want = append(want, users[email].ID)
			}
			slices.Sort(want)
			if !slices.Equal(ids(got), want) {
				t.Errorf("List(prefix %q) = %v, want %v", tc.prefix, ids(got), want)
			}
		}
		if got := list(t, repo, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 50}, EmailPrefix: "adam"}); len(got) == 1 {
			checkUser(t, got[0], users["adam@example.org"])
		}

		// With the exact filter too, both apply.
		for _, tc := range []struct {
			prefix string
			want   int
		}{{"ada@", 1}, {"adam", 0}} {
			got := list(t, repo, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 50}, Email: "ada@example.com", EmailPrefix: tc.prefix})
			if len(got) != tc.want {
				t.Errorf("List(email ada@example.com, prefix %q) = %v, want %d users", tc.prefix, ids(got), tc.want)
			}
		}
	})

	t.Run("list_filters_no_email_can_match", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		store(t, repo, "ada@example.com")
		// Bytes no stored email holds match nobody; they are no error
		// (PostgreSQL refuses to compare them with text).
		for _, s := range []string{"ada\x00@example.com", "\xffada@example.com", "\x00", "\xff"} {
			for _, q := range []ports.UserListQuery{{Email: domain.Email(s)}, {EmailPrefix: s}} {
				q.Page.Limit = 50
				if got := list(t, repo, q); len(got) != 0 {
					t.Errorf("List(%+v) = %v, want none", q, ids(got))
				}
			}
		}
	})

	t.Run("list_email_prefix_pages", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		// Matches and misses interleaved, so that a page must skip rows
		// and still be full.
		var emails []string
		for i := range 16 {
			switch i % 3 {
			case 0:
				emails = append(emails, "team-"+randomHex(4)+"@example.com")
			default:
				emails = append(emails, "other-"+randomHex(4)+"@example.com")
			}
		}
		users := store(t, repo, emails...)
		var want []domain.UserID
		for email, u := range users {
			if email[:5] == "team-" {
				want = append(want, u.ID)
			}
		}
		slices.Sort(want)

		var got []domain.UserID
		var after domain.UserID
		for pages := 0; ; pages++ {
			if pages > len(want) {
				t.Fatal("pagination does not end")
			}
			page := list(t, repo, ports.UserListQuery{Page: domain.Page[domain.UserID]{After: after, Limit: 2}, EmailPrefix: "team-"})
			if len(page) == 0 {
				break
			}
			if len(page) > 2 {
				t.Fatalf("a page of %d users, limit 2", len(page))
			}
			got = append(got, ids(page)...)
			after = page[len(page)-1].ID
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages with prefix team-:\n got %v\nwant %v", got, want)
		}
		// A cursor between the matches starts after it.
		page := list(t, repo, ports.UserListQuery{Page: domain.Page[domain.UserID]{After: want[2], Limit: 50}, EmailPrefix: "team-"})
		if !slices.Equal(ids(page), want[3:]) {
			t.Errorf("List(prefix, after the third match) = %v, want %v", ids(page), want[3:])
		}
	})
}
