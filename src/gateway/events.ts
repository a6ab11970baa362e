import type { EventId, EventStore, StreamId } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * Recent SSE events of one session, so a client that lost its stream can resume with
 * Last-Event-ID. Bounded: the oldest events go first, which caps an idle session's memory.
 */
export class SessionEventStore implements EventStore {
  private readonly events = new Map<EventId, { streamId: StreamId; message: JSONRPCMessage }>();
  private seq = 0;

  constructor(private readonly max = 200) {}

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const id = `${streamId}_${++this.seq}`;
    this.events.set(id, { streamId, message });
    if (this.events.size > this.max) this.events.delete(this.events.keys().next().value!);
    return id;
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    return this.events.get(eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: EventId, { send }: { send: (id: EventId, message: JSONRPCMessage) => Promise<void> }): Promise<StreamId> {
    const from = this.events.get(lastEventId);
    if (!from) return '';
    let after = false;
    for (const [id, e] of this.events) {
      if (id === lastEventId) { after = true; continue; }
      if (after && e.streamId === from.streamId) await send(id, e.message);
    }
    return from.streamId;
  }
}
