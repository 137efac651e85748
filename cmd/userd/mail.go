package main

import (
	"context"
	"log/slog"

	"go.uber.org/fx"

	"github.com/userd/userd/adapters/mail"
	"github.com/userd/userd/config"
	"github.com/userd/userd/ports"
)

// mailModule provides the mailer: SMTP when USERD_SMTP_URL is set, .eml
// files in USERD_MAIL_DIR otherwise. Building it parses the templates (a
// missing or broken one fails the start, naming the file) and opens no
// connection: a mail server that is away at start leaves the messages
// waiting in the outbox, and the service starts.
var mailModule = fx.Module("mail",
	fx.Provide(fx.Annotate(newMailer, fx.As(new(ports.Mailer)))),
)

func newMailer(lc fx.Lifecycle, cfg config.Config, log *slog.Logger) (*mail.Mailer, error) {
	m, err := mail.New(mail.Options{
		SMTPURL:      cfg.SMTPURL,
		From:         cfg.MailFrom,
		Dir:          cfg.MailDir,
		TemplatesDir: cfg.MailTemplates,
		Logger:       log,
	})
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(func(context.Context) error { return m.Close() }))
	return m, nil
}
