package httpapi

import (
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/domain"
)

// writeUser answers with u as a userResponse. It is what every signed-in
// read of an account answers (GET /api/users/me above all), so it encodes
// u itself, into a pooled buffer, instead of json.Marshal(toUserResponse(u)):
// reflection, the copies toUserResponse makes and the check json.Marshal
// makes of each metadata's raw JSON were about a tenth of the read's CPU
// in the handler (docs/performance.md, "Speed, fifth pass").
func (h *handler) writeUser(c *gin.Context, status int, u domain.User) {
	buf := userBuffers.Get().(*[]byte)
	*buf = appendUserJSON((*buf)[:0], u)
	// writeBody writes the bytes before it returns: the buffer is free
	// again.
	writeBody(c, status, jsonContentTypeValue, *buf)
	if cap(*buf) <= maxPooledUserBuffer {
		userBuffers.Put(buf)
	}
}

// maxPooledUserBuffer bounds the buffers kept: an account with the
// largest metadata (4 KiB and 16 KiB) is encoded in a buffer of its own.
const maxPooledUserBuffer = 4 << 10

var userBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// appendUserJSON appends to dst the bytes json.Marshal(toUserResponse(u))
// would write (FuzzAppendUserJSON holds it to that): the same fields in
// the same order, strings escaped as encoding/json escapes them (HTML
// characters included), and the metadata's canonical JSON with the same
// escapes.
func appendUserJSON(dst []byte, u domain.User) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, u.ID.String())
	dst = append(dst, `,"name":`...)
	dst = appendJSONString(dst, u.Name)
	dst = append(dst, `,"email":`...)
	dst = appendJSONString(dst, u.Email.String())
	dst = append(dst, `,"profiles":[`...)
	for i, p := range u.Profiles {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, string(p))
	}
	dst = append(dst, `],"emailVerified":`...)
	dst = strconv.AppendBool(dst, u.EmailVerified)
	dst = append(dst, `,"mfaEnabled":`...)
	dst = strconv.AppendBool(dst, u.MFAEnabled)
	dst = append(dst, `,"disabled":`...)
	dst = strconv.AppendBool(dst, u.Disabled)
	dst = append(dst, `,"metadata":`...)
	dst = appendRawJSON(dst, u.Metadata.String())
	dst = append(dst, `,"appMetadata":`...)
	dst = appendRawJSON(dst, u.AppMetadata.String())
	dst = append(dst, `,"createdAt":"`...)
	dst = appendTime(dst, u.CreatedAt)
	dst = append(dst, `","updatedAt":"`...)
	dst = appendTime(dst, u.UpdatedAt)
	return append(dst, `"}`...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json quotes a string with
// HTML escaping on (json.Marshal's default): <, > and & as \u003c, \u003e
// and \u0026, control characters as \n, \t and the like or \u00XX, bytes
// that are not UTF-8 as \ufffd, and U+2028 and U+2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= ' ' && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendRawJSON appends raw, a metadata's canonical JSON (compact and
// valid: domain.Metadata), with the escapes json.Marshal adds to a
// json.RawMessage: <, >, & and U+2028 and U+2029, which canonical JSON
// can hold only inside its strings.
func appendRawJSON(dst []byte, raw string) []byte {
	start := 0
	for i := 0; i < len(raw); i++ {
		b := raw[i]
		switch {
		case b == '<' || b == '>' || b == '&':
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			start = i + 1
		case b == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
			i += 2
			start = i + 1
		}
	}
	return append(dst, raw[start:]...)
}
