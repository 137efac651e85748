package gormstore

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// TestRotateOwnPostgres_reads_one_family checks the plans of
// rotateOwnPostgresSQL, custom and generic, over 300 live sessions,
// before and after their statistics are gathered: every read of
// refresh_families must go by its primary key. Its first form joined the
// family to the token it had found, and before ANALYZE PostgreSQL planned
// that join as a read of every family not revoked (by
// refresh_families_revoked_at_idx), filtered to the one: each refresh
// read every live session, and cost PostgreSQL about twice the CPU
// (docs/performance.md, "Speed, fifth pass").
func TestRotateOwnPostgres_reads_one_family(t *testing.T) {
	db := openPostgres(t)
	user := newTestUser(t, NewUserRepository(db), "plan@example.com")
	now := toMicros(time.Now())
	seed := `WITH s AS (SELECT i FROM generate_series(1, 300) AS s(i)), f AS (
		INSERT INTO refresh_families (id, user_id, created_at, expires_at, last_used_at)
		SELECT 'fam-' || i, $1, $2, $3, $2 FROM s)
	INSERT INTO refresh_tokens (token_hash, family_id, user_id, issued_at, expires_at)
	SELECT 'tok-' || i, 'fam-' || i, $1, $2, $3 FROM s`
	ctx := t.Context()
	pool, err := db.gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.ExecContext(ctx, seed, string(user.ID), now, now+int64(time.Hour/time.Microsecond)); err != nil {
		t.Fatalf("seed sessions: %v", err)
	}
	// PREPARE and the plan cache mode belong to one session: one
	// connection of the pool, held for the test.
	conn, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := conn.ExecContext(ctx, `PREPARE rotate_own(text, bigint, text, bigint, bigint) AS `+rotateOwnPostgresSQL); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	for _, stats := range []string{"before ANALYZE", "after ANALYZE"} {
		if stats == "after ANALYZE" {
			if _, err := conn.ExecContext(ctx, `ANALYZE refresh_families; ANALYZE refresh_tokens`); err != nil {
				t.Fatalf("analyze: %v", err)
			}
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = `+mode); err != nil {
				t.Fatal(err)
			}
			checkFamilyReads(t, conn, stats+", "+mode, now)
		}
	}
}

// checkFamilyReads explains the prepared rotate_own and wants each read
// of refresh_families in its plan to be by the primary key.
func checkFamilyReads(t *testing.T, conn *sql.Conn, label string, now int64) {
	t.Helper()
	// EXPLAIN EXECUTE takes no parameters of its own: the times are
	// written into it.
	explain := fmt.Sprintf(`EXPLAIN (FORMAT JSON) EXECUTE rotate_own('tok-7', %d, 'tok-new', %d, %d)`, now+1, now+1, now+2)
	var plan string
	if err := conn.QueryRowContext(t.Context(), explain).Scan(&plan); err != nil {
		t.Fatalf("%s: explain: %v", label, err)
	}
	var nodes []planNode
	if err := json.Unmarshal([]byte(plan), &nodes); err != nil {
		t.Fatalf("%s: plan %q: %v", label, plan, err)
	}
	reads := 0
	for _, n := range nodes {
		n.Plan.walk(func(n planNode) {
			if n.Relation != "refresh_families" || n.NodeType == "ModifyTable" {
				return
			}
			reads++
			if n.NodeType != "Index Scan" || n.Index != "refresh_families_pkey" {
				t.Errorf("%s: refresh_families read by %s %s; want an Index Scan of refresh_families_pkey\n%s",
					label, n.NodeType, n.Index, plan)
			}
		})
	}
	if reads == 0 {
		t.Errorf("%s: the plan reads no family:\n%s", label, plan)
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON): what the test looks at.
type planNode struct {
	NodeType string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Plans    []planNode `json:"Plans"`
	Plan     *planNode  `json:"Plan"`
}

func (n *planNode) walk(visit func(planNode)) {
	if n == nil {
		return
	}
	visit(*n)
	for i := range n.Plans {
		n.Plans[i].walk(visit)
	}
}
