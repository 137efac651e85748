package tracing

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// settings are what the standard OTEL_* variables ask of the spans: the
// sampler, the limits of a span and the batching of the exports, each
// with the default the specification gives it. The SDK reads the same
// variables; where it falls back to a default on a value it cannot read
// and only logs it, userd refuses to start and names the variable.
type settings struct {
	sampler sdktrace.Sampler
	limits  sdktrace.SpanLimits
	batch   batchSettings
}

// batchSettings are the batch of spans' (OTEL_BSP_*).
type batchSettings struct {
	scheduleDelay, exportTimeout time.Duration
	maxQueue, maxBatch           int
}

// readSettings reads the variables through getenv.
func readSettings(getenv func(string) string) (settings, error) {
	var s settings
	var err error
	if s.sampler, err = readSampler(getenv); err != nil {
		return s, err
	}
	if s.limits, err = readLimits(getenv); err != nil {
		return s, err
	}
	s.batch, err = readBatch(getenv)
	return s, err
}

// readSampler reads OTEL_TRACES_SAMPLER and its argument: the samplers
// the specification names and the SDK builds, parent-based always-on
// when unset.
func readSampler(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() (sdktrace.Sampler, error) {
		if arg == "" {
			return sdktrace.TraceIDRatioBased(1), nil
		}
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || v < 0 || v > 1 {
			return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG %q: a ratio from 0 to 1", arg)
		}
		return sdktrace.TraceIDRatioBased(v), nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio":
		return ratio()
	case "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.ParentBased(r), nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_SAMPLER %q: userd samples with always_on, always_off, traceidratio or their parentbased_ forms", name)
	}
}

// readLimits reads the span limits (OTEL_SPAN_*_LIMIT, and the general
// OTEL_ATTRIBUTE_*_LIMIT where the span's own is unset). A negative
// limit is none.
func readLimits(getenv func(string) string) (sdktrace.SpanLimits, error) {
	l := sdktrace.SpanLimits{
		AttributeValueLengthLimit:   sdktrace.DefaultAttributeValueLengthLimit,
		AttributeCountLimit:         sdktrace.DefaultAttributeCountLimit,
		EventCountLimit:             sdktrace.DefaultEventCountLimit,
		LinkCountLimit:              sdktrace.DefaultLinkCountLimit,
		AttributePerEventCountLimit: sdktrace.DefaultAttributePerEventCountLimit,
		AttributePerLinkCountLimit:  sdktrace.DefaultAttributePerLinkCountLimit,
	}
	for _, v := range []struct {
		into  *int
		names []string
	}{
		{&l.AttributeValueLengthLimit, []string{"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"}},
		{&l.AttributeCountLimit, []string{"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "OTEL_ATTRIBUTE_COUNT_LIMIT"}},
		{&l.EventCountLimit, []string{"OTEL_SPAN_EVENT_COUNT_LIMIT"}},
		{&l.LinkCountLimit, []string{"OTEL_SPAN_LINK_COUNT_LIMIT"}},
		{&l.AttributePerEventCountLimit, []string{"OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT"}},
		{&l.AttributePerLinkCountLimit, []string{"OTEL_LINK_ATTRIBUTE_COUNT_LIMIT"}},
	} {
		for _, name := range v.names {
			if raw := strings.TrimSpace(getenv(name)); raw != "" {
				n, err := strconv.Atoi(raw)
				if err != nil {
					return l, fmt.Errorf("%s %q: a whole number (negative: no limit)", name, raw)
				}
				*v.into = n
				break
			}
		}
	}
	return l, nil
}

// readBatch reads OTEL_BSP_*, unset ones at the SDK's defaults: as the
// SDK does, a batch larger than the queue is cut to the queue's size.
func readBatch(getenv func(string) string) (batchSettings, error) {
	b := batchSettings{scheduleDelay: sdktrace.DefaultScheduleDelay * time.Millisecond,
		exportTimeout: sdktrace.DefaultExportTimeout * time.Millisecond,
		maxQueue:      sdktrace.DefaultMaxQueueSize, maxBatch: sdktrace.DefaultMaxExportBatchSize}
	for _, v := range []struct {
		name string
		ms   *time.Duration
		n    *int
	}{
		{name: "OTEL_BSP_SCHEDULE_DELAY", ms: &b.scheduleDelay},
		{name: "OTEL_BSP_EXPORT_TIMEOUT", ms: &b.exportTimeout},
		{name: "OTEL_BSP_MAX_QUEUE_SIZE", n: &b.maxQueue},
		{name: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", n: &b.maxBatch},
	} {
		raw := strings.TrimSpace(getenv(v.name))
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n <= 0 {
			return b, fmt.Errorf("%s %q: a whole number above 0", v.name, raw)
		}
		if v.ms != nil {
			*v.ms = time.Duration(n) * time.Millisecond
		} else {
			*v.n = n
		}
	}
	b.maxBatch = min(b.maxBatch, b.maxQueue)
	return b, nil
}
