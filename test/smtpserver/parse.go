package smtpserver

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"net/url"
	"strings"
)

// Parsed is a message as a mail client shows it.
type Parsed struct {
	// Header is the message's header, as sent.
	Header mail.Header
	// From and To are the addresses of those headers, without their
	// display names, comma-separated when there are several.
	From, To string
	// Subject is decoded (RFC 2047).
	Subject string
	// ContentType is the message's media type, e.g.
	// multipart/alternative; Parts are the media types of its leaf parts
	// in order (for a message of one part, that part's).
	ContentType string
	Parts       []string
	// Text and HTML are the first text/plain and text/html parts,
	// decoded, with line breaks as "\n".
	Text, HTML string
}

// ParseMessage reads raw (an RFC 5322 message) with net/mail and, for a
// multipart body, mime/multipart, undoing each part's
// Content-Transfer-Encoding (quoted-printable, base64).
func ParseMessage(raw []byte) (Parsed, error) {
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Parsed{}, fmt.Errorf("read message: %w", err)
	}
	p := Parsed{Header: m.Header}
	if p.Subject, err = new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject")); err != nil {
		return Parsed{}, fmt.Errorf("subject: %w", err)
	}
	if p.From, err = addresses(m.Header, "From"); err != nil {
		return Parsed{}, err
	}
	if p.To, err = addresses(m.Header, "To"); err != nil {
		return Parsed{}, err
	}
	ct := m.Header.Get("Content-Type")
	if ct == "" {
		ct = "text/plain"
	}
	if p.ContentType, _, err = mime.ParseMediaType(ct); err != nil {
		return Parsed{}, fmt.Errorf("content type: %w", err)
	}
	if err := p.readPart(textproto.MIMEHeader(m.Header), m.Body); err != nil {
		return Parsed{}, err
	}
	return p, nil
}

// readPart reads one part, or the parts of a multipart one, into p.
func (p *Parsed) readPart(h textproto.MIMEHeader, body io.Reader) error {
	ct := h.Get("Content-Type")
	if ct == "" {
		ct = "text/plain"
	}
	mediaType, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Errorf("content type %q: %w", ct, err)
	}
	if strings.HasPrefix(mediaType, "multipart/") {
		if params["boundary"] == "" {
			return fmt.Errorf("%s without a boundary", mediaType)
		}
		r := multipart.NewReader(body, params["boundary"])
		for {
			// NextRawPart: NextPart would undo quoted-printable itself,
			// and hide the header that says so.
			part, err := r.NextRawPart()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", mediaType, err)
			}
			if err := p.readPart(part.Header, part); err != nil {
				return err
			}
		}
	}
	p.Parts = append(p.Parts, mediaType)
	decoded, err := decode(h.Get("Content-Transfer-Encoding"), body)
	if err != nil {
		return fmt.Errorf("%s: %w", mediaType, err)
	}
	text := strings.ReplaceAll(string(decoded), "\r\n", "\n")
	switch {
	case mediaType == "text/plain" && p.Text == "":
		p.Text = text
	case mediaType == "text/html" && p.HTML == "":
		p.HTML = text
	}
	return nil
}

// decode undoes a Content-Transfer-Encoding.
func decode(cte string, body io.Reader) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		// The decoder skips the line breaks.
		body = base64.NewDecoder(base64.StdEncoding, body)
	case "", "7bit", "8bit", "binary":
	default:
		return nil, fmt.Errorf("unknown Content-Transfer-Encoding %q", cte)
	}
	return io.ReadAll(body)
}

func addresses(h mail.Header, key string) (string, error) {
	if h.Get(key) == "" {
		return "", nil
	}
	list, err := h.AddressList(key)
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.Address
	}
	return strings.Join(out, ", "), nil
}

// LinkFrom returns the first line of text that is nothing but an http or
// https URL (white space around it aside), or "" when no line is.
func LinkFrom(text string) string {
	for line := range strings.Lines(text) {
		l := strings.TrimSpace(line)
		if !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") || strings.ContainsAny(l, " \t") {
			continue
		}
		if u, err := url.Parse(l); err == nil && u.Host != "" {
			return l
		}
	}
	return ""
}
