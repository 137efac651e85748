package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Metadata is a JSON object that apps keep on an account, held in its
// canonical encoding: compact, the keys of every object sorted and each
// once, numbers as they were written, strings re-escaped by encoding/json
// (without HTML escaping). Two values are equal as JSON exactly when
// their canonical encodings are equal (numbers aside: 1 and 1.0 differ),
// which is how a non-admin's unchanged appMetadata is recognised. The
// zero Metadata is the empty object.
type Metadata struct{ canonical string }

// Limits of an account's metadata, measured on the canonical encoding.
const (
	// MetadataMaxBytes bounds User.Metadata, which the user changes.
	MetadataMaxBytes = 4 << 10
	// AppMetadataMaxBytes bounds User.AppMetadata, which only an admin
	// changes.
	AppMetadataMaxBytes = 16 << 10
	// MetadataMaxDepth bounds the nesting of either: the object itself is
	// level 1. Deeper documents are a parser's hazard in every language
	// the apps read them with (and a 4 KiB document that deep is no
	// longer data anyone reads).
	MetadataMaxDepth = 16
)

// Field names of the account's metadata.
const (
	FieldMetadata    = "metadata"
	FieldAppMetadata = "appMetadata"
)

// emptyObject is the canonical encoding of the zero Metadata.
const emptyObject = "{}"

// ParseMetadata validates raw as a JSON object of at most maxBytes in
// its canonical encoding and MetadataMaxDepth levels, and returns it in
// that encoding. The message is meant for the client; it is empty when
// raw is fine.
func ParseMetadata(raw []byte, maxBytes int) (Metadata, string) {
	// JSON's own whitespace only: bytes.TrimSpace would take "\v" too.
	if trimmed := bytes.TrimLeft(raw, " \t\r\n"); !json.Valid(raw) || trimmed[0] != '{' {
		return Metadata{}, "must be a JSON object"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return Metadata{}, "must be a JSON object"
	}
	if jsonDepth(v) > MetadataMaxDepth {
		return Metadata{}, fmt.Sprintf("must nest at most %d levels", MetadataMaxDepth)
	}
	canonical, err := canonicalJSON(v)
	if err != nil {
		return Metadata{}, "must be a JSON object"
	}
	if len(canonical) > maxBytes {
		return Metadata{}, fmt.Sprintf("must be at most %d bytes in compact form", maxBytes)
	}
	return Metadata{canonical: canonical}, ""
}

// MetadataFromStore returns stored metadata, written by String: it is
// trusted to be canonical already, so that reading an account costs no
// parse. An empty string (a row written before the column held a
// default) is the empty object.
func MetadataFromStore(s string) Metadata {
	if s == emptyObject {
		return Metadata{}
	}
	return Metadata{canonical: s}
}

// String returns the canonical encoding: "{}" for the empty object.
func (m Metadata) String() string {
	if m.canonical == "" {
		return emptyObject
	}
	return m.canonical
}

// JSON returns the canonical encoding, for a JSON document to embed.
func (m Metadata) JSON() json.RawMessage { return json.RawMessage(m.String()) }

// Equal reports whether m and o hold the same JSON object.
func (m Metadata) Equal(o Metadata) bool { return m.String() == o.String() }

// IsEmpty reports whether m is the empty object.
func (m Metadata) IsEmpty() bool { return m.String() == emptyObject }

// canonicalJSON encodes v compactly: encoding/json sorts map keys;
// HTML escaping is off so that "<" stays one byte, as the client sent it.
func canonicalJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// jsonDepth is the nesting of a decoded value: 0 for a scalar, 1 for an
// object or array of scalars.
func jsonDepth(v any) int {
	deepest := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			deepest = max(deepest, jsonDepth(e))
		}
	case []any:
		for _, e := range v {
			deepest = max(deepest, jsonDepth(e))
		}
	default:
		return 0
	}
	return deepest + 1
}

// ParseMetadataFields parses the metadata and appMetadata of a request
// (nil when absent), adding a problem of each to verr. It returns nil for
// an absent or invalid one.
func ParseMetadataFields(metadata, appMetadata []byte, verr *ValidationError) (*Metadata, *Metadata) {
	return parseMetadataField(FieldMetadata, metadata, MetadataMaxBytes, verr),
		parseMetadataField(FieldAppMetadata, appMetadata, AppMetadataMaxBytes, verr)
}

func parseMetadataField(field string, raw []byte, maxBytes int, verr *ValidationError) *Metadata {
	if raw == nil {
		return nil
	}
	m, msg := ParseMetadata(raw, maxBytes)
	if msg != "" {
		verr.Add(field, msg)
		return nil
	}
	return &m
}
