"""Plugin ``mailbox.default``: Flink's MailboxProcessor model."""

from kernel import hookimpl


@hookimpl
def create_mailbox_processor(task, run):
    from plugins.mailbox.processor import DefaultMailboxProcessor

    return DefaultMailboxProcessor(task.default_action, task.loop, task.fail_from_mailbox, task.suspension_changed,
                                   task.hand_over_emitted)
