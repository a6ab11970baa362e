/**
 * A copy of shared control state kept in this process, so a decision reads it without a round
 * trip. A change published by any instance marks it stale at once, and the next read waits for
 * Redis; a periodic re-read is the safety net. While Redis is unreachable the last copy stands.
 */
export class Mirror<T> {
  private value: T | undefined;
  private fresh = false;
  private loading: Promise<T> | undefined;
  private generation = 0;

  constructor(private readonly load: () => Promise<T>) {}

  get(): T | Promise<T> {
    if (this.fresh) return this.value!;
    return (this.loading ??= this.refresh());
  }

  invalidate(): void {
    this.generation++;
    this.fresh = false;
    this.loading = undefined;
  }

  async refresh(): Promise<T> {
    const generation = this.generation;
    try {
      const value = await this.load();
      if (generation === this.generation) {
        this.value = value;
        this.fresh = true;
      }
      return value;
    } finally {
      if (generation === this.generation) this.loading = undefined;
    }
  }
}
