"""The Slack app channel: a Block Kit message per request, decided with its buttons and modals.

- ``blocks``: the message, built from the request as it is now (so it follows the record);
- ``modals``: the reject, respond, edit and remember forms, and reading what a reviewer typed;
- ``relay``: posts and updates the messages from the event log, through ``slack_sdk``'s ``WebClient``;
- ``verify``: Slack's request signatures, the timestamp window and replays;
- ``interactions``: the interactivity endpoint, ``POST /slack/interactions``.
"""
