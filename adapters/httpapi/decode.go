package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
)

// decodeJSON reads the request body into dst, a pointer to a DTO struct
// whose fields all carry json tags. It is strict where encoding/json is
// lenient, because a request we half-understand is worse than one we
// refuse:
//   - the body must be exactly one JSON object: empty bodies, other values
//     and trailing data are malformed_json;
//   - keys must match a tag exactly (encoding/json would also take "EMAIL"
//     for "email") else unknown_field, and may appear once (else
//     malformed_json): with duplicates, two parsers could read two requests;
//   - a value of the wrong type is malformed_json.
//
// A JSON null is the same as an absent field. A body over the limit set by
// apiHeaders is a 413.
func decodeJSON(r *http.Request, dst any) error {
	if r.Body == nil {
		return badRequest("malformed_json", "the request body is empty")
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("malformed_json", "the request body is empty")
	}
	if err := checkObjectKeys(body, jsonFields(dst)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			// Field is a path ("profiles.0" for an element); name the
			// top-level field and the type it must have as a whole.
			name, _, _ := strings.Cut(typeErr.Field, ".")
			return badRequest("malformed_json", fmt.Sprintf("field %q must be %s", name, describeType(fieldType(dst, name))))
		}
		return badRequest("malformed_json", "the request body is not valid JSON")
	}
	return nil
}

// decodeOptionalJSON is decodeJSON for a route whose body may be left out
// (the contract's "—"): an empty body leaves dst as it is, anything else
// is held to the same rules.
func decodeOptionalJSON(r *http.Request, dst any) error {
	if r.Body == nil {
		return nil
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	r.Body = &bufferedBody{Reader: bytes.NewReader(body), buf: body}
	return decodeJSON(r, dst)
}

// readBody reads the whole body: a *http.MaxBytesError past the limit,
// malformed_json when it cannot be read. A body bufferBody read is taken
// as it is.
func readBody(r *http.Request) ([]byte, error) {
	if b, ok := r.Body.(*bufferedBody); ok {
		if body, whole := b.take(); whole {
			return body, nil
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, err
		}
		return nil, badRequest("malformed_json", "the request body could not be read")
	}
	return body, nil
}

// checkObjectKeys walks the top level of body: one object with known,
// distinct keys, and nothing after it.
func checkObjectKeys(body []byte, known map[string]bool) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return badRequest("malformed_json", "the request body is not valid JSON")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return badRequest("malformed_json", "the request body must be a JSON object")
	}
	seen := make(map[string]bool, len(known))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return badRequest("malformed_json", "the request body is not valid JSON")
		}
		key, _ := tok.(string)
		if !known[key] {
			return badRequest("unknown_field", fmt.Sprintf("unknown field %q", key))
		}
		if seen[key] {
			return badRequest("malformed_json", fmt.Sprintf("field %q appears more than once", key))
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return badRequest("malformed_json", "the request body is not valid JSON")
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return badRequest("malformed_json", "the request body is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("malformed_json", "unexpected data after the JSON object")
	}
	return nil
}

// fieldsByType holds jsonFields' answer for each DTO type, computed once.
var fieldsByType sync.Map // reflect.Type → map[string]bool, never written after

// jsonFields returns the json names of the fields of the struct dst
// points to. The map is shared: it must not be written.
func jsonFields(dst any) map[string]bool {
	t := reflect.TypeOf(dst).Elem()
	if known, ok := fieldsByType.Load(t); ok {
		return known.(map[string]bool) //nolint:forcetypeassert // only jsonFields stores, and only this type
	}
	out := make(map[string]bool, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	fieldsByType.Store(t, out)
	return out
}

// fieldType returns the type of the field of the struct dst points to whose
// json name is name, or nil.
func fieldType(dst any, name string) reflect.Type {
	t := reflect.TypeOf(dst).Elem()
	for i := 0; i < t.NumField(); i++ {
		if n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); n == name {
			return t.Field(i).Type
		}
	}
	return nil
}

// describeType names a Go type the way a JSON client thinks of it.
func describeType(t reflect.Type) string {
	if t == nil {
		return "of another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	}
	return "of another type"
}
