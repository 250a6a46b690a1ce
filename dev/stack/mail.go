package stack

import (
	"context"
	"io"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/devstack"
)

// ProvideMail finds or starts the Mailpit mail catcher that encore dev
// sends every email to, unless an SMTP server is configured
// (ENCORE_SMTP_URL or ENCORE_SMTP_ADDR): then nil. Stop the result on
// exit (it stops only a Mailpit it started).
func ProvideMail(ctx context.Context, cfg config.Config, log io.Writer) (*devstack.Mailpit, error) {
	if cfg.SMTPURL != "" || cfg.SMTPAddr != "" {
		return nil, nil
	}
	return devstack.EnsureMailpit(ctx, devstack.MailpitOptions{Dir: cfg.DataDir, SMTPAddr: cfg.MailpitSMTPAddr,
		HTTPAddr: cfg.MailpitHTTPAddr, Log: log})
}
