-- 002: list requests by tool without scanning (the reviewer page filters on it), as the SQLite store does.
CREATE INDEX requests_tool_position ON requests (tool, position);
