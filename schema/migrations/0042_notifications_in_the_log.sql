-- One row per message sent about a booking. The once-per-kind marker the
-- saga checks before it sends (notifications) and the log of every message
-- (notification_log) were two rows for each automatic e-mail; the marker is
-- now the log's first line of its kind, kept unique, and a support resend
-- is a line marked resend.
ALTER TABLE notification_log ADD COLUMN resend boolean NOT NULL DEFAULT false;

-- Support's resends (kind 'resend'), and lines after the first of their
-- kind, were resends.
UPDATE notification_log l SET resend = true
WHERE l.kind = 'resend'
   OR EXISTS (SELECT 1 FROM notification_log f
              WHERE f.reservation_id = l.reservation_id AND f.kind = l.kind AND f.id < l.id);

-- Markers written before the log existed become lines without a recipient.
INSERT INTO notification_log (reservation_id, kind, recipient, sent_at)
SELECT n.reservation_id, n.kind, '', n.sent_at FROM notifications n
WHERE NOT EXISTS (SELECT 1 FROM notification_log l WHERE l.reservation_id = n.reservation_id AND l.kind = n.kind);

CREATE UNIQUE INDEX notification_log_once ON notification_log (reservation_id, kind) WHERE NOT resend;

DROP TABLE notifications;
