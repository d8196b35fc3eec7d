/**
 * How crossgate names a Claude tool: by the tool's own name, with the MCP server that offers it apart
 * (`mcp__tickets__delete_ticket` is `delete_ticket`, server `tickets`), as `crossgate_claude._names` does.
 * Server names may contain `__`, so the name is never split on it: the server is the one the CLI
 * reports, else the longest known server whose prefix starts the name. An `mcp__` name no known
 * server explains is refused, so it cannot slip past a rule written for its real name.
 */

export const MCP_PREFIX = 'mcp__';

export interface ToolName {
  /** The CLI's name (`mcp__tickets__delete_ticket`, `Bash`). */
  readonly claude: string;
  /** The name the policy judges. */
  readonly tool: string;
  readonly server: string | null;
}

export const UNKNOWN_SERVER = (tool: string) =>
  `crossgate cannot tell which MCP server offers the tool '${tool}' (no server it knows of has that prefix), so it was not run.`;

/** A server's name as the CLI writes it inside tool names. */
export function inToolName(server: string): string {
  return server.replace(/[^A-Za-z0-9_-]/g, '_');
}

/** The neutral name of `claude`, or the refusal the model reads when no known server explains it. */
export function nameTool(claude: string, servers: readonly string[], reported?: string | null): ToolName | string {
  if (!claude.startsWith(MCP_PREFIX)) return { claude, tool: claude, server: null };
  const candidates = [...(reported ? [reported] : []), ...[...new Set(servers)].sort((a, b) => b.length - a.length)];
  for (const server of candidates) {
    const prefix = `${MCP_PREFIX}${inToolName(server)}__`;
    if (claude.startsWith(prefix) && claude.length > prefix.length) return { claude, tool: claude.slice(prefix.length), server };
  }
  return UNKNOWN_SERVER(claude);
}
