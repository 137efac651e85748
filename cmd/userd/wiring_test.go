package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/fx"
)

// withApp starts the app, runs the command, and stops the app whether the
// command succeeds or not.
func TestWithApp_starts_runs_and_stops(t *testing.T) {
	cfg := testConfig(t, nil)
	for _, fail := range []bool{false, true} {
		var events []string
		hook := fx.Invoke(func(lc fx.Lifecycle) {
			lc.Append(fx.Hook{
				OnStart: func(context.Context) error { events = append(events, "start"); return nil },
				OnStop:  func(context.Context) error { events = append(events, "stop"); return nil },
			})
		})
		boom := errors.New("boom")
		err := withApp(t.Context(), cfg, hook, func(context.Context) error {
			events = append(events, "run")
			if fail {
				return boom
			}
			return nil
		})
		if fail != errors.Is(err, boom) || (!fail && err != nil) {
			t.Errorf("fail=%v: withApp = %v", fail, err)
		}
		if got := strings.Join(events, ","); got != "start,run,stop" {
			t.Errorf("fail=%v: %s, want start,run,stop", fail, got)
		}
	}
}
