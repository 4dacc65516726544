"""Mailbox plugins: the MailboxProcessor that drives each StreamTask."""
