/**
 * Which process listens on a TCP port, and the ARMADA_HOME it runs with (Linux /proc): `armada status` tells its
 * home's services from another home's on the same ports by it. Only processes this user may inspect are found.
 */
import fs from 'node:fs';
import { armadaHome } from '../config';

export interface PortListener {
  pid: number;
  command: string;
  /** the ARMADA_HOME of its environment; undefined when it cannot be read */
  home?: string;
}

/** The socket inodes listening on `port` (IPv4 and IPv6). */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // sl, local address (hex ip:port), remote address, state (0A = LISTEN), …, inode (10th field)
      if (f.length > 9 && f[3] === '0A' && Number.parseInt(f[1]?.split(':')[1] ?? '', 16) === port) inodes.add(f[9] as string);
    }
  }
  return inodes;
}

function holds(pid: number, sockets: Set<string>): boolean {
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    try {
      if (sockets.has(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))) return true;
    } catch {
      /* closed meanwhile */
    }
  }
  return false;
}

function describe(pid: number): PortListener {
  let command = '';
  let home: string | undefined;
  try {
    command = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    const env = Object.fromEntries(
      fs
        .readFileSync(`/proc/${pid}/environ`, 'utf8')
        .split('\0')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    );
    home = armadaHome(env, fs.readlinkSync(`/proc/${pid}/cwd`));
  } catch {
    /* another user's process, or gone */
  }
  return { pid, command, home };
}

/** The process listening on `port`, looked for among `candidates` first; undefined when none is found. */
export function portListener(port: number, candidates: number[] = []): PortListener | undefined {
  const inodes = listeningInodes(port);
  if (!inodes.size) return undefined;
  const sockets = new Set([...inodes].map((i) => `socket:[${i}]`));
  const others = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number);
  for (const pid of [...candidates, ...others]) if (pid !== process.pid && holds(pid, sockets)) return describe(pid);
  return undefined;
}
