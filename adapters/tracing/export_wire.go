package tracing

import (
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The field numbers of the OTLP messages a span is encoded with
// (opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto,
// as go.opentelemetry.io/proto/otlp declares them).
const (
	scopeSpansSpans protowire.Number = 2

	spanTraceID           protowire.Number = 1
	spanSpanID            protowire.Number = 2
	spanTraceState        protowire.Number = 3
	spanParentSpanID      protowire.Number = 4
	spanName              protowire.Number = 5
	spanKindField         protowire.Number = 6
	spanStartTime         protowire.Number = 7
	spanEndTime           protowire.Number = 8
	spanAttributes        protowire.Number = 9
	spanDroppedAttributes protowire.Number = 10
	spanEvents            protowire.Number = 11
	spanDroppedEvents     protowire.Number = 12
	spanLinks             protowire.Number = 13
	spanDroppedLinks      protowire.Number = 14
	spanStatus            protowire.Number = 15
	spanFlagsField        protowire.Number = 16

	statusMessage protowire.Number = 2
	statusCodeNum protowire.Number = 3

	keyValueKey   protowire.Number = 1
	keyValueValue protowire.Number = 2

	anyValueString protowire.Number = 1
	anyValueInt    protowire.Number = 3
)

// appendSpan appends the fields of sd's Span message to b. As proto3
// does, a field that holds its zero value is left out, but for the
// status, always there (as otlptrace's conversion makes it). The parts
// userd's spans rarely or never hold (events, links, attribute values
// other than a string or an integer) are converted to their messages
// (export_values.go) and marshalled. sd has ended: nothing writes it.
func appendSpan(b []byte, sd *span) []byte {
	sc := sd.sc
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytesField(b, spanTraceID, tid[:])
	b = appendBytesField(b, spanSpanID, sid[:])
	b = appendStringField(b, spanTraceState, sc.TraceState().String())
	if psid := sd.parentID; psid.IsValid() {
		b = appendBytesField(b, spanParentSpanID, psid[:])
	}
	b = appendStringField(b, spanName, validUTF8(sd.name))
	b = appendVarintField(b, spanKindField, uint64(spanKind(sd.kind))) //nolint:gosec // G115: its values are not negative
	b = appendFixed64Field(b, spanStartTime, unixNano(sd.start.UnixNano()))
	b = appendFixed64Field(b, spanEndTime, unixNano(sd.endNano))
	for _, a := range sd.attrs {
		b = appendKeyValue(b, spanAttributes, a)
	}
	b = appendVarintField(b, spanDroppedAttributes, uint64(clampUint32(sd.droppedAttrs)))
	if x := sd.more; x != nil {
		for _, e := range events(x.events) {
			b = appendMessage(b, spanEvents, e)
		}
		b = appendVarintField(b, spanDroppedEvents, uint64(clampUint32(x.droppedEvents)))
		for _, l := range links(x.links) {
			b = appendMessage(b, spanLinks, l)
		}
		b = appendVarintField(b, spanDroppedLinks, uint64(clampUint32(x.droppedLinks)))
	}

	msg, code := validUTF8(sd.statusDesc), uint64(statusCode(sd.statusCode)) //nolint:gosec // G115: its values are not negative
	size := 0
	if msg != "" {
		size += protowire.SizeTag(statusMessage) + protowire.SizeBytes(len(msg))
	}
	if code != 0 {
		size += protowire.SizeTag(statusCodeNum) + protowire.SizeVarint(code)
	}
	b = protowire.AppendVarint(protowire.AppendTag(b, spanStatus, protowire.BytesType), uint64(size)) //nolint:gosec // G115: a size
	b = appendStringField(b, statusMessage, msg)
	b = appendVarintField(b, statusCodeNum, code)

	b = protowire.AppendTag(b, spanFlagsField, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, spanFlags(sc.TraceFlags(), sd.parentRemote))
}

// appendKeyValue appends a as a KeyValue message in field num: a string
// or an integer (what userd's spans hold) encoded here, any other value
// converted and marshalled.
func appendKeyValue(b []byte, num protowire.Number, a attribute.KeyValue) []byte {
	key := validUTF8(string(a.Key))
	keySize := 0
	if key != "" {
		keySize = protowire.SizeTag(keyValueKey) + protowire.SizeBytes(len(key))
	}
	var valueSize int
	var str string
	var n uint64
	switch a.Value.Type() {
	case attribute.STRING:
		str = validUTF8(a.Value.AsString())
		valueSize = protowire.SizeTag(anyValueString) + protowire.SizeBytes(len(str))
	case attribute.INT64:
		n = uint64(a.Value.AsInt64()) //nolint:gosec // G115: int64 is encoded as its two's complement, as protobuf does
		valueSize = protowire.SizeTag(anyValueInt) + protowire.SizeVarint(n)
	default:
		return appendMessage(b, num, &commonpb.KeyValue{Key: key, Value: anyValue(a.Value)})
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(keySize+protowire.SizeTag(keyValueValue)+protowire.SizeBytes(valueSize))) //nolint:gosec // G115: a size
	b = appendStringField(b, keyValueKey, key)
	b = protowire.AppendVarint(protowire.AppendTag(b, keyValueValue, protowire.BytesType), uint64(valueSize)) //nolint:gosec // G115: a size
	// A oneof's member is written even when it holds its zero value.
	if a.Value.Type() == attribute.STRING {
		return protowire.AppendString(protowire.AppendTag(b, anyValueString, protowire.BytesType), str)
	}
	return protowire.AppendVarint(protowire.AppendTag(b, anyValueInt, protowire.VarintType), n)
}

// appendMessage appends m, marshalled, in field num. A message that does
// not marshal (a string that is not UTF-8, which protobuf refuses, in a
// place validUTF8 does not reach) is left out rather than failing the
// whole export.
func appendMessage(b []byte, num protowire.Number, m proto.Message) []byte {
	enc, err := proto.Marshal(m)
	if err != nil {
		return b
	}
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), enc)
}

func appendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

// appendStringField appends s, which must be valid UTF-8 (validUTF8; a
// trace state is ASCII, as the SDK parses it).
func appendStringField(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func appendFixed64Field(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), v)
}

// validUTF8 returns s with any byte sequence that is not UTF-8 replaced
// by U+FFFD: a protobuf string must be UTF-8, and a receiver that
// decodes one that is not refuses the whole export.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
