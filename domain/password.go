package domain

import (
	"bufio"
	_ "embed"
	"strings"
	"sync"
	"unicode/utf8"
)

// Password limits, counted in characters (runes), not bytes.
const (
	PasswordMinLen = 8
	PasswordMaxLen = 128
)

//go:embed common_passwords.txt
var commonPasswordsFile string

var (
	commonPasswordsOnce sync.Once
	commonPasswords     map[string]struct{}
)

// IsCommonPassword reports whether pw, compared without case, is on the
// shipped list of common passwords.
func IsCommonPassword(pw string) bool {
	commonPasswordsOnce.Do(func() {
		commonPasswords = make(map[string]struct{}, 1024)
		sc := bufio.NewScanner(strings.NewReader(commonPasswordsFile))
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
				commonPasswords[strings.ToLower(line)] = struct{}{}
			}
		}
	})
	_, ok := commonPasswords[strings.ToLower(pw)]
	return ok
}

// CheckPassword applies the password policy: 8 to 128 characters, not a
// common password, not the account's email. There are deliberately no
// composition rules (NIST SP 800-63B). It returns a message for the client,
// or "" when pw is acceptable.
func CheckPassword(pw string, email Email) string {
	if !utf8.ValidString(pw) {
		return "must be valid UTF-8"
	}
	n := utf8.RuneCountInString(pw)
	if n < PasswordMinLen {
		return "must be at least 8 characters"
	}
	if n > PasswordMaxLen {
		return "must be at most 128 characters"
	}
	if email != "" && strings.EqualFold(strings.TrimSpace(pw), string(email)) {
		return "must not be the email address"
	}
	if IsCommonPassword(pw) {
		return "is too common"
	}
	return ""
}
