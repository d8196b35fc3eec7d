"""A real SMTP server on 127.0.0.1 (``aiosmtpd``) that keeps what it receives."""

from __future__ import annotations

import email
import email.policy
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from typing import Any

from aiosmtpd.controller import Controller


class Inbox:
    """Messages received, each with its envelope recipients."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], Message]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(
            (list(envelope.rcpt_tos), email.message_from_bytes(envelope.content, policy=email.policy.default))
        )
        return "250 OK"

    def to(self, address: str) -> list[Message]:
        return [m for rcpts, m in self.messages if address in rcpts]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def smtp_server(port: int | None = None) -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=port or free_port())
    controller.start()
    try:
        yield inbox, controller.port
    finally:
        controller.stop()


def text_of(message: Message) -> str:
    """The text/plain part."""
    for part in message.walk():
        if part.get_content_type() == "text/plain":
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            return payload.decode(part.get_content_charset() or "utf-8")
    raise AssertionError("no text part")


def link(message: Message, label: str) -> str:
    """The URL after ``label`` in the text part (``Approve http://…``)."""
    for line in text_of(message).splitlines():
        if line.startswith(f"{label} "):
            return line.split(" ", 1)[1]
    raise AssertionError(f"no {label} link")
