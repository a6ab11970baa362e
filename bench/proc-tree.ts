// Resident memory of a process and all its descendants, from /proc (Linux): the gateway and the
// upstream processes it started, sampled on an interval so a peak between two reads is not missed
// by more than one interval.
import { readdirSync, readFileSync } from 'node:fs';
import { median } from './stats.js';

/** Every descendant of pid (children, their children, …), from /proc/PID/task/TID/children. */
export function descendants(pid: number): number[] {
  const out: number[] = [];
  const walk = (p: number) => {
    let tasks: string[];
    try { tasks = readdirSync(`/proc/${p}/task`); } catch { return; } // gone
    for (const tid of tasks) {
      let text = '';
      try { text = readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8'); } catch { continue; }
      for (const c of text.split(' ').filter(Boolean).map(Number)) { out.push(c); walk(c); }
    }
  };
  walk(pid);
  return out;
}

/** VmRSS of pid in bytes (0 when it is gone or a zombie). */
export function rss(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch { return 0; }
}

export function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

export interface TreeSample { at: number; gateway: number; children: number; total: number; count: number }

export function sampleTree(pid: number): TreeSample {
  const kids = descendants(pid);
  const gateway = rss(pid);
  const children = kids.reduce((sum, k) => sum + rss(k), 0);
  return { at: Date.now(), gateway, children, total: gateway + children, count: kids.length };
}

/** Samples pid's tree every `everyMs` until stopped; remembers every descendant it ever saw. */
export class TreeSampler {
  readonly samples: TreeSample[] = [];
  readonly seen = new Set<number>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly pid: number, private readonly everyMs = 200) {}

  start(): this {
    this.take();
    this.timer = setInterval(() => this.take(), this.everyMs);
    return this;
  }

  take(): TreeSample {
    for (const k of descendants(this.pid)) this.seen.add(k);
    const s = sampleTree(this.pid);
    this.samples.push(s);
    return s;
  }

  stop(): { peak: TreeSample; steady: TreeSample } {
    clearInterval(this.timer);
    this.take();
    const peak = this.samples.reduce((a, b) => (b.total > a.total ? b : a));
    // Steady: the median of the second half's samples (after the clients have all started).
    const late = this.samples.slice(Math.floor(this.samples.length / 2));
    const steady = { at: 0, gateway: median(late.map((s) => s.gateway)), children: median(late.map((s) => s.children)), total: median(late.map((s) => s.total)), count: median(late.map((s) => s.count)) };
    return { peak, steady };
  }
}
