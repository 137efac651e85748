package domain

import "testing"

// The issue asks for at least 10,000 common passwords; the length rule
// makes shorter entries pointless, so all of these must be 8+ characters.
func TestCommonPasswordList_has_at_least_10000_usable_entries(t *testing.T) {
	IsCommonPassword("")
	usable := 0
	for pw := range commonPasswords {
		if len([]rune(pw)) >= PasswordMinLen {
			usable++
		}
	}
	if usable < 10_000 {
		t.Fatalf("%d common passwords of 8+ characters, want at least 10,000", usable)
	}
}
