"""Helpers shared by test packages: store factories for backends that need a server."""
