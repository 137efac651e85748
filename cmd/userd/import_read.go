package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/userd/userd/application"
)

// Import file formats.
const (
	formatCSV   = "csv"
	formatJSONL = "jsonl"
)

// formatFromName picks the format of an import file by its extension.
func formatFromName(name string) (string, bool) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".csv":
		return formatCSV, true
	case ".jsonl", ".ndjson":
		return formatJSONL, true
	}
	return "", false
}

// readRecords reads every record of an import file. A line that cannot be
// read as a record becomes a record with Unreadable set, so that it is
// reported with the others; an error is returned only when the file as a
// whole cannot be read (I/O, a bad CSV header, a line over 1 MiB).
func readRecords(r io.Reader, format string) ([]application.ImportRecord, error) {
	if format == formatCSV {
		return readCSV(r)
	}
	return readJSONL(r)
}

// csvColumns are the columns an import CSV has, in any order.
var csvColumns = []string{"name", "email", "password_hash", "profiles"}

// csvOptionalColumns may be there too; a file without them imports as if
// each cell were empty.
var csvOptionalColumns = []string{"email_verified", "disabled", "metadata", "app_metadata"}

// parseBool reads an email_verified or disabled cell: true or false in
// any letter case, or empty for false.
func parseBool(cell string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(cell)) {
	case "true":
		return true, true
	case "false", "":
		return false, true
	}
	return false, false
}

// splitProfiles splits a CSV profiles cell at '|' or ';', dropping blanks.
func splitProfiles(cell string) []string {
	fields := strings.FieldsFunc(cell, func(r rune) bool { return r == '|' || r == ';' })
	out := make([]string, 0, len(fields))
	for _, f := range fields {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// readCSV reads RFC 4180 CSV with a header row naming csvColumns.
func readCSV(r io.Reader) ([]application.ImportRecord, error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = -1 // counted below, for a clearer message
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("the file is empty: want a header row " + strings.Join(csvColumns, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	col := make(map[string]int, len(csvColumns))
	for i, h := range header {
		if i == 0 {
			h = strings.TrimPrefix(h, "\uFEFF") // a byte-order mark, as spreadsheets write
		}
		h = strings.ToLower(strings.TrimSpace(h))
		switch _, dup := col[h]; {
		case !slices.Contains(csvColumns, h) && !slices.Contains(csvOptionalColumns, h):
			return nil, fmt.Errorf("line 1: unknown column %q: want %s (and optionally %s)", h,
				strings.Join(csvColumns, ","), strings.Join(csvOptionalColumns, ","))
		case dup:
			return nil, fmt.Errorf("line 1: column %q appears twice", h)
		}
		col[h] = i
	}
	for _, c := range csvColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("line 1: no column %q: want %s", c, strings.Join(csvColumns, ","))
		}
	}

	var records []application.ImportRecord
	for {
		fields, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return records, nil
		}
		var perr *csv.ParseError
		if errors.As(err, &perr) {
			records = append(records, application.ImportRecord{Line: perr.StartLine, Unreadable: "CSV: " + perr.Err.Error()})
			continue
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if len(fields) != len(header) {
			msg := fmt.Sprintf("%d fields, want %d (%s)", len(fields), len(header), strings.Join(header, ","))
			if len(fields) > len(header) && slices.ContainsFunc(fields, func(f string) bool { return strings.HasPrefix(f, "$argon2") }) {
				msg += `: an argon2id hash holds commas, so quote it ("$argon2id$…")`
			}
			records = append(records, application.ImportRecord{Line: line, Unreadable: msg})
			continue
		}
		rec := application.ImportRecord{
			Line:         line,
			Name:         fields[col["name"]],
			Email:        fields[col["email"]],
			PasswordHash: strings.TrimSpace(fields[col["password_hash"]]),
			Profiles:     splitProfiles(fields[col["profiles"]]),
		}
		readOptionalCells(&rec, col, fields)
		records = append(records, rec)
	}
}

// readOptionalCells reads the cells of csvOptionalColumns that the file
// has into rec. A metadata cell holds a JSON object, judged with the rest
// of the record; an empty one is absent (the empty object).
func readOptionalCells(rec *application.ImportRecord, col map[string]int, fields []string) {
	for _, b := range []struct {
		column string
		dst    *bool
	}{{"email_verified", &rec.EmailVerified}, {"disabled", &rec.Disabled}} {
		if i, ok := col[b.column]; ok {
			v, valid := parseBool(fields[i])
			if !valid {
				rec.Unreadable = b.column + ": must be true, false or empty"
			}
			*b.dst = v
		}
	}
	for _, m := range []struct {
		column string
		dst    *[]byte
	}{{"metadata", &rec.Metadata}, {"app_metadata", &rec.AppMetadata}} {
		if i, ok := col[m.column]; ok && strings.TrimSpace(fields[i]) != "" {
			*m.dst = []byte(fields[i])
		}
	}
}

// maxJSONLine is the longest JSON line read.
const maxJSONLine = 1 << 20

// jsonKeys are the keys of an import JSON object, exactly so spelt;
// emailVerified and disabled may be left out (false), metadata and
// appMetadata too (the empty objects).
var jsonKeys = []string{"name", "email", "passwordHash", "profiles", "emailVerified", "disabled", "metadata", "appMetadata"}

// readJSONL reads one JSON object per line; blank lines are skipped.
func readJSONL(r io.Reader) ([]application.ImportRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxJSONLine)
	var records []application.ImportRecord
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\uFEFF"))
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		rec, msg := parseJSONRecord(b)
		rec.Line, rec.Unreadable = line, msg
		records = append(records, rec)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return nil, fmt.Errorf("line %d: longer than %d bytes", line+1, maxJSONLine)
	}
	return records, sc.Err()
}

// parseJSONRecord decodes one line. Keys must match exactly (Go's decoder
// alone would take "EMAIL" for "email") and every value must have its type;
// null counts as absent, except for metadata and appMetadata, which must
// be objects. The message says what is wrong, if anything.
func parseJSONRecord(b []byte) (application.ImportRecord, string) {
	var rec application.ImportRecord
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return rec, "JSON: want an object"
		}
		return rec, "JSON: " + strings.TrimPrefix(err.Error(), "json: ")
	}
	if obj == nil {
		return rec, "JSON: want an object, not null"
	}
	for k := range obj {
		if !slices.Contains(jsonKeys, k) {
			return rec, fmt.Sprintf("unknown key %q: want %s", k, strings.Join(jsonKeys, ", "))
		}
	}
	for _, f := range []struct {
		key string
		dst any
		typ string
	}{
		{"name", &rec.Name, "a string"},
		{"email", &rec.Email, "a string"},
		{"passwordHash", &rec.PasswordHash, "a string"},
		{"profiles", &rec.Profiles, "an array of strings"},
		{"emailVerified", &rec.EmailVerified, "true or false"},
		{"disabled", &rec.Disabled, "true or false"},
	} {
		if raw, ok := obj[f.key]; ok {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return rec, fmt.Sprintf("%s: must be %s", f.key, f.typ)
			}
		}
	}
	// Judged with the rest of the record (a null too: it is no object).
	rec.Metadata, rec.AppMetadata = obj["metadata"], obj["appMetadata"]
	return rec, ""
}
