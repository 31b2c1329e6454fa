/** Runs `bin/armada <args>` as its own process and resolves once it prints the JSON line whose `event` is `ready`. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';

export const ARMADA_BIN = path.join(__dirname, '..', '..', 'bin', 'armada');

export interface ArmadaProcess {
  child: ChildProcess;
  /** the ready line, parsed */
  ready: Record<string, unknown>;
  /** every stdout line so far */
  lines: string[];
}

export function spawnArmada(args: string[], ready: string, env: NodeJS.ProcessEnv, timeoutMs = 90_000): Promise<ArmadaProcess> {
  const child = spawn(process.execPath, [ARMADA_BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr = (stderr + d.toString()).slice(-4000)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`armada ${args[0]} did not start: ${stderr}`)), timeoutMs);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`armada ${args[0]} exited ${code}: ${stderr}`));
    };
    child.once('exit', onExit);
    readline.createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      lines.push(line);
      try {
        const msg = JSON.parse(line) as Record<string, unknown>;
        if (msg.event === ready) {
          clearTimeout(timer);
          child.removeListener('exit', onExit);
          resolve({ child, ready: msg, lines });
        }
      } catch {
        /* a log line */
      }
    });
  });
}
