package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/fx"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/webhook"
	"github.com/userd/userd/config"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// webhooksModule provides the webhook sender when USERD_WEBHOOK_URL is
// set, and none (a nil ports.WebhookSender: no events are queued)
// otherwise.
var webhooksModule = fx.Module("webhooks", fx.Provide(newWebhookSender, newClaimsHook))

// newClaimsHook provides the claims hook when USERD_CLAIMS_HOOK_URL is
// set, and none (a nil ports.ClaimsHook: tokens get no extra claims)
// otherwise. Its transport is made here, one pool for every call, so that
// whatever wraps outgoing calls (traces) wraps it here too.
func newClaimsHook(cfg config.Config, clk ports.Clock, wrap outgoingTransport) (ports.ClaimsHook, error) {
	if cfg.ClaimsHookURL == "" {
		return nil, nil
	}
	transport := wrap(webhook.HookTransport())
	return webhook.NewClaimsHook(webhook.HookOptions{URL: cfg.ClaimsHookURL, Secret: cfg.ClaimsHookSecret,
		Timeout: cfg.ClaimsHookTimeout, Clock: clk, Transport: transport})
}

func newWebhookSender(cfg config.Config, clk ports.Clock, wrap outgoingTransport) (ports.WebhookSender, error) {
	if cfg.WebhookURL == "" {
		return nil, nil
	}
	return webhook.New(webhook.Options{URL: cfg.WebhookURL, Secret: cfg.WebhookSecret, Clock: clk, WrapTransport: wrap})
}

func (r *root) webhooksTestCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "test",
		Short: "send a signed ping event to USERD_WEBHOOK_URL and print the answer",
		Long: withConfigNote(`Post one event of type "ping" to USERD_WEBHOOK_URL, signed with
USERD_WEBHOOK_SECRET as every event is (Standard Webhooks), and print the
receiver's status and the start of its answer. It exits 1 unless the answer
is 2xx. Nothing is queued and the database is not opened.`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return r.webhooksTest(cmd.Context()) },
	}
}

func (r *root) webhooksTest(ctx context.Context) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	if cfg.WebhookURL == "" {
		return errors.New("webhooks test: USERD_WEBHOOK_URL is not set")
	}
	sender, err := webhook.New(webhook.Options{URL: cfg.WebhookURL, Secret: cfg.WebhookSecret, Clock: clock.System{}})
	if err != nil {
		return err
	}
	now := time.Now()
	e := domain.NewWebhookEvent(domain.NewOutboxID(now), domain.WebhookPing, now, nil)
	ctx, cancel := context.WithTimeout(ctx, webhook.DefaultTimeout+time.Second)
	defer cancel()
	res, err := sender.Send(ctx, e)
	if res.Status != 0 {
		if _, werr := fmt.Fprintf(r.stdout, "sent %s (webhook-id %s): %d\n%s\n", e.Type, e.ID, res.Status, res.Body); werr != nil {
			return werr
		}
	}
	if err != nil {
		return fmt.Errorf("webhooks test: %w", err)
	}
	return nil
}
