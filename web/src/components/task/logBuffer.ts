/**
 * The log of one process, append-only: entries are pushed, never copied, so 100k lines cost one array. The filtered
 * view (levels, sources) is a list of indices kept up to date as entries arrive; it is rebuilt only when the filter
 * changes. `version` grows on every change, for React to notice.
 */
import type { LogEntry } from './taskTypes';

export interface LogFilter {
  hiddenLevels: ReadonlySet<string>;
  hiddenSources: ReadonlySet<string>;
}

export class LogBuffer {
  readonly entries: LogEntry[] = [];
  /** indices into entries that pass the filter, in order */
  visible: number[] = [];
  readonly levels = new Set<string>();
  readonly sources = new Set<string>();
  version = 0;
  private filter: LogFilter = { hiddenLevels: new Set(), hiddenSources: new Set() };

  private passes(e: LogEntry): boolean {
    return !this.filter.hiddenLevels.has(e.level) && !this.filter.hiddenSources.has(e.source);
  }

  /** the highest seq kept: an entry at or below it (a replay after a reconnect) is dropped */
  lastSeq = 0;

  push(e: LogEntry): void {
    if (e.seq <= this.lastSeq) return;
    this.lastSeq = e.seq;
    const i = this.entries.length;
    this.entries.push(e);
    this.levels.add(e.level);
    this.sources.add(e.source);
    if (this.passes(e)) this.visible.push(i);
    this.version++;
  }

  /** Forgets every entry (the server's log is not the one these came from: a reset). */
  clear(): void {
    this.entries.length = 0;
    this.visible = [];
    this.levels.clear();
    this.sources.clear();
    this.lastSeq = 0;
    this.version++;
  }

  setFilter(filter: LogFilter): void {
    this.filter = filter;
    const v: number[] = [];
    for (let i = 0; i < this.entries.length; i++) if (this.passes(this.entries[i] as LogEntry)) v.push(i);
    this.visible = v;
    this.version++;
  }

  /** Positions in `visible` whose message contains `query` (case-insensitive), from `from` on. */
  search(query: string, from = 0): number[] {
    const out: number[] = [];
    if (!query) return out;
    const q = query.toLowerCase();
    for (let p = from; p < this.visible.length; p++) {
      const e = this.entries[this.visible[p] as number] as LogEntry;
      if (e.message.toLowerCase().includes(q)) out.push(p);
    }
    return out;
  }
}
