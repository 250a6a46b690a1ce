package vocab

// MailStatus is the state of one email in the mail queue (mail_queue).
type MailStatus string

// Every mail status (mirrors the CHECK on mail_queue.status).
const (
	// MailPending waits for its next attempt (or is being sent).
	MailPending MailStatus = "PENDING"
	// MailSent was accepted by the SMTP server (or written to the mailbox).
	MailSent MailStatus = "SENT"
	// MailDead failed every attempt: support sees it and may resend it.
	MailDead MailStatus = "DEAD"
)

// MailStatuses is the full set.
var MailStatuses = []MailStatus{MailPending, MailSent, MailDead}
