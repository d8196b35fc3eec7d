"""Where reviewers decide besides the page: channels that follow the event log (Slack, e-mail, Teams).

Each channel is a view over the durable request, never the record itself: it reads the log after the
queue has stored a change, through its own delivery cursor, so a channel that is down leaves the
request pending and catches up from its cursor once it is back.
"""
