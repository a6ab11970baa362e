/**
 * A task's end seen through another instance of a fleet (issue 26 item 4: behind a round-robin
 * balancer the poll that sees a task end usually reaches another instance than the one whose
 * audit log holds the task's row). Before, that instance left the row alone and nobody finished
 * it: the row kept `task_created` for ever. Now it leaves a note in the shared state and the row's
 * instance finishes the row from it, once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { MemoryOAuthStore } from '../src/state/memory.js';
import { TaskEndWatch } from '../src/tasks/ends.js';
import { TaskGuard } from '../src/tasks/guard.js';
import { TaskBook } from '../src/tasks/records.js';
import { Rows, ticks } from './helpers/tasks.js';

const TASK = { taskId: 'task-7', status: 'working' as const, ttlMs: 60_000 };
const done = (status: string) => ({ jsonrpc: '2.0', id: 9, result: { taskId: TASK.taskId, status } });

/** Two instances on one shared store, each with its own audit log and its own watch (no timer: swept by hand). */
function fleet() {
  const store = new MemoryOAuthStore();
  let clock = 1_000_000;
  const now = () => clock;
  const instance = (db: string) => {
    const rows = new Rows(db);
    const ends = new TaskEndWatch(now, 0);
    const guard = new TaskGuard({ book: new TaskBook(store, now), server: 'research', grant: 'g1', audit: rows.log, auditDb: `host:${db}`, log: pino({ level: 'silent' }), maxDepth: 64, now, ends });
    return { rows, ends, guard };
  };
  return { a: instance('/a/audit.db'), b: instance('/b/audit.db'), tick: (ms: number) => { clock += ms; } };
}

/** Instance `at` creates the task (its call's row is appended there) and starts watching it. */
async function create(at: ReturnType<typeof fleet>['a']): Promise<string> {
  const { eventId } = at.rows.log.append({ kind: 'call', server: 'research', grant: 'g1', session: 's', tool: 'research', decision: 'allow' } as never) as { eventId: string };
  await at.guard.created(TASK, { tool: 'research', args: { topic: 't' }, audit: eventId, started: 1_000_000 });
  return eventId;
}

describe('a task ended through another instance', () => {
  it('the row of the instance that created it gets the end, once', async () => {
    const { a, b, tick } = fleet();
    await create(a);
    assert.equal(a.ends.size, 1, 'the creating instance watches its task');
    tick(5_000);
    b.guard.answered('tasks/get', TASK.taskId, done('completed'));
    await ticks();
    assert.deepEqual(b.rows.rows, [], 'the other instance writes nothing to its own log');
    assert.deepEqual(a.rows.rows[0].outcomes, [], 'not yet: the row is finished by its own instance');
    await a.ends.sweep();
    assert.deepEqual(a.rows.rows[0].outcomes, ['task_completed']);
    assert.equal(a.ends.size, 0, 'no longer watched');
    // Seen again (another poll, another instance, or the creating one): nothing more.
    b.guard.answered('tasks/get', TASK.taskId, done('completed'));
    a.guard.answered('tasks/get', TASK.taskId, done('completed'));
    await ticks();
    await a.ends.sweep();
    assert.deepEqual(a.rows.rows[0].outcomes, ['task_completed']);
  });

  it('seen by the creating instance itself: finished at once and no longer watched; a later note elsewhere changes nothing', async () => {
    const { a, b } = fleet();
    await create(a);
    a.guard.answered('tasks/cancel', TASK.taskId, done('cancelled'));
    await ticks();
    assert.deepEqual(a.rows.rows[0].outcomes, ['task_cancelled']);
    assert.equal(a.ends.size, 0);
    b.guard.answered('tasks/get', TASK.taskId, done('cancelled'));
    await ticks();
    await a.ends.sweep();
    assert.deepEqual(a.rows.rows[0].outcomes, ['task_cancelled']);
  });

  it('a task still running leaves the row open; a sweep without a note changes nothing', async () => {
    const { a, b } = fleet();
    await create(a);
    b.guard.answered('tasks/get', TASK.taskId, done('working'));
    await ticks();
    await a.ends.sweep();
    assert.deepEqual(a.rows.rows[0].outcomes, []);
    assert.equal(a.ends.size, 1, 'still watched');
  });
});
