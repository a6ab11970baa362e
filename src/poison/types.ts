/** What a poisoning finding is about (docs/risk.md, "Poisoned tool definitions"). */
export const FINDING_KINDS = [
  'override', 'conceal', 'credentials', 'exfiltrate', 'other_tool',
  'tag_characters', 'bidi_controls', 'zero_width', 'encoded_blob', 'overlong',
] as const;
export type FindingKind = (typeof FINDING_KINDS)[number];

/**
 * `hide`: specific enough that an ordinary tool does not carry it — under `poisoned: hide` the
 * tool is removed from tools/list and denied when called. `warn`: a weaker sign, logged and
 * audited (and shown in records) but never hidden.
 */
export type Level = 'hide' | 'warn';

/** One finding, naming its evidence like the classifier's rationale does. */
export interface Finding {
  kind: FindingKind;
  level: Level;
  /** Where: `name`, `title`, `description`, `inputSchema.properties.path.description`, … */
  field: string;
  /** The evidence, printable: the phrase, or the character class, count and what they spell. */
  evidence: string;
  /** How many (hidden characters, blob length, characters of text). */
  count?: number;
  /** One sentence a person reads: what the text does and where. */
  says: string;
}

/** What a policy does with a tool that has findings (SPEC 11). */
export const POISONED_ACTIONS = ['hide', 'warn', 'allow'] as const;
export type PoisonedAction = (typeof POISONED_ACTIONS)[number];
