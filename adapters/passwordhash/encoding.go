package passwordhash

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/userd/userd/adapters/passwordhash/internal/argon2"
)

// bcryptFormat is the modular crypt form of a bcrypt hash.
var bcryptFormat = regexp.MustCompile(`^\$2[aby]\$[0-9]{2}\$[./A-Za-z0-9]{53}$`)

// argon2Hash is a decoded argon2id PHC string.
type argon2Hash struct {
	params Params
	salt   []byte
	key    []byte
}

// verify reports whether password, as given, is the one hashed in d,
// deriving with memory from pool.
func (d argon2Hash) verify(pool *argon2.Pool, password string) bool {
	p := d.params
	got := pool.IDKey([]byte(password), d.salt, p.Iterations, p.Memory, p.Parallelism, p.KeyLen)
	return subtle.ConstantTimeCompare(got, d.key) == 1
}

// decodeArgon2id parses $argon2id$v=19$m=M,t=T,p=P$salt$hash. The m, t and p
// parameters may come in any order, each exactly once; PHC's optional keyid
// and data parameters are refused because x/crypto cannot use them.
func decodeArgon2id(encoded string) (argon2Hash, error) {
	fail := func(why string) (argon2Hash, error) {
		return argon2Hash{}, fmt.Errorf("%w: argon2id: %s", ErrMalformedHash, why)
	}
	parts := strings.Split(encoded, "$")
	// "", "argon2id", "v=19", "m=…,t=…,p=…", salt, hash
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return fail("wrong number of fields")
	}
	if parts[2] != "v="+strconv.Itoa(argon2Version) {
		return fail("unsupported version")
	}

	var p Params
	var seen [3]bool
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fail("malformed parameter")
		}
		// Parsing with bitSize 32 rejects values that would wrap in uint32;
		// the bounds below do the rest.
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || (len(v) > 1 && v[0] == '0') {
			return fail("malformed parameter value")
		}
		var i int
		switch k {
		case "m":
			i, p.Memory = 0, uint32(n)
		case "t":
			i, p.Iterations = 1, uint32(n)
		case "p":
			if n > MaxParallelism {
				return fail("parameters out of bounds")
			}
			i, p.Parallelism = 2, uint8(n)
		default:
			return fail("unknown parameter")
		}
		if seen[i] {
			return fail("repeated parameter")
		}
		seen[i] = true
	}
	if !seen[0] || !seen[1] || !seen[2] {
		return fail("missing parameter")
	}

	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return fail("undecodable salt")
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil {
		return fail("undecodable hash")
	}
	// Bounded before the conversion, so that a length past 2³² cannot wrap
	// into the range Validate accepts.
	saltLen, keyLen := len(salt), len(key)
	if saltLen > MaxSaltLen || keyLen > MaxKeyLen {
		return fail("parameters out of bounds")
	}
	p.SaltLen, p.KeyLen = uint32(saltLen), uint32(keyLen)
	if err := p.Validate(); err != nil {
		return fail("parameters out of bounds")
	}
	return argon2Hash{params: p, salt: salt, key: key}, nil
}

// bcryptMaxPassword is the number of password bytes bcrypt uses.
const bcryptMaxPassword = 72

// checkBcrypt refuses a bcrypt hash that cannot be decoded or whose cost is
// above MaxBcryptCost, before any work is spent on it.
func checkBcrypt(encoded string) error {
	cost, err := bcrypt.Cost([]byte(encoded))
	if err != nil {
		return fmt.Errorf("%w: bcrypt: %w", ErrMalformedHash, err)
	}
	if cost > MaxBcryptCost {
		return fmt.Errorf("%w: bcrypt: cost %d above %d", ErrMalformedHash, cost, MaxBcryptCost)
	}
	return nil
}

// verifyBcrypt compares password, as given, with a bcrypt hash that
// checkBcrypt accepted. bcrypt only reads the first 72 bytes of a password
// and the system the hash was imported from did the same, so a longer
// password is cut there rather than refused: newer versions of x/crypto
// return an error for it, which would turn a long password into a 500.
func verifyBcrypt(encoded, password string) (bool, error) {
	pw := []byte(password)
	if len(pw) > bcryptMaxPassword {
		pw = pw[:bcryptMaxPassword]
	}
	err := bcrypt.CompareHashAndPassword([]byte(encoded), pw)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
		return false, nil
	}
	return false, fmt.Errorf("%w: bcrypt: %w", ErrMalformedHash, err)
}
