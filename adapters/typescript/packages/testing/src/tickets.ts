/**
 * The delete-ticket world of the seed scenario, in a JSON file every process can see: the tickets
 * that exist, and a log of every delete that actually ran (so a test counts tool-body runs).
 */

import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

interface World {
  tickets: string[];
  deletes: string[];
}

export class TicketStore {
  constructor(readonly path: string) {
    if (!existsSync(path)) this.write({ tickets: [], deletes: [] });
  }

  seed(ids: readonly string[] = ['t1', 't2', 't3']): void {
    const world = this.read();
    this.write({ ...world, tickets: [...new Set([...world.tickets, ...ids])].sort() });
  }

  ids(): string[] {
    return this.read().tickets;
  }

  /** The tool body: delete one ticket and log that the delete ran. */
  delete(id: string): string {
    const world = this.read();
    const gone = world.tickets.includes(id);
    this.write({ tickets: world.tickets.filter((t) => t !== id), deletes: [...world.deletes, id] });
    return gone ? `deleted ticket ${id}` : `ticket ${id} does not exist`;
  }

  /** How many times the delete body ran (for one ticket, or in all). */
  deleteRuns(id?: string): number {
    const { deletes } = this.read();
    return id === undefined ? deletes.length : deletes.filter((d) => d === id).length;
  }

  private read(): World {
    return JSON.parse(readFileSync(this.path, 'utf8')) as World;
  }

  private write(world: World): void {
    const temporary = `${this.path}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(world));
    renameSync(temporary, this.path);
  }
}
