import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CATEGORIES } from '../src/risk/index.js';
import { blindSets, formatSet, scoreSet } from './helpers/safety.js';
import { ROOT } from './helpers/toolgate.js';

/**
 * The blind sets (README.md in each test/blind… folder): real tools from servers outside the corpus, labelled
 * against SPEC section 5 before the classifier saw them. blind, blind2, blind3 and blind4 have been looked at
 * often enough that they are tuning data now (issue 24); blind5 joined them in round five, blind6 in round six and
 * blind7 in round seven; the measure is the fresh set labelled after them (blind8), reported here like the others as soon as it lands. This test reports only aggregates — never an
 * individual disagreement — and holds floors a little below and ceilings a little above what was reached, so a
 * regression shows. Beside accuracy it reports what the recommended policy lets through, judged with the real
 * engine (test/helpers/safety.ts): unsafe misses and over-holds, each with its 95% Wilson interval, and how
 * many tools the classifier decided by leaning strict (two readings, low confidence, the stricter taken). Every
 * `test/blind*` folder with a labels.json is picked up (with no floors until someone sets them).
 */
interface Floors {
  labelledAt: string;
  minTools: number;
  floor: { overall: number; perCategory: number };
  /** The highest share of unsafe misses and of over-holds allowed. */
  ceiling: { unsafe: number; overHolds: number };
}

// Ceilings sit just above what the classifier reaches (tune7, issue 24 round seven: classes read from a call's shape,
// src/risk/classify/strict-shape.ts, after strict-domain.ts in round six); over-holds may never pass SPEC 5's target (5%). On the old sets a multi-action tool
// held by allowlist counts as a miss when its label gives no per-action categories (blind: 9 of its 14 misses, blind2: 7 of 10).
const KNOWN: Record<string, Floors> = {
  // Labels adjudicated with a second blind labeller at 92b862b (test/blind/ADJUDICATION.md).
  'test/blind': { labelledAt: '4e3f19e', minTools: 540, floor: { overall: 0.93, perCategory: 0.84 }, ceiling: { unsafe: 0.105, overHolds: 0.035 } },
  'test/blind2': { labelledAt: '1d8e0e9', minTools: 420, floor: { overall: 0.9, perCategory: 0.72 }, ceiling: { unsafe: 0.12, overHolds: 0.03 } },
  'test/blind3': { labelledAt: '8e70291', minTools: 450, floor: { overall: 0.89, perCategory: 0.6 }, ceiling: { unsafe: 0.02, overHolds: 0.045 } },
  // Labelled blind at 1066c7e, second labelling 98947bd (kappa 0.916), settled by SPEC 5 at 7920dfc (test/blind4/ADJUDICATION.md).
  'test/blind4': { labelledAt: '1066c7e', minTools: 950, floor: { overall: 0.81, perCategory: 0.7 }, ceiling: { unsafe: 0.035, overHolds: 0.04 } },
  // The fresh measure for round four: labelled blind at 4c4e984, second labelling by two readers joined at 048fe46
  // (kappa 0.965), settled by SPEC 5 at 00b62e6 (test/blind5/ADJUDICATION.md); measured once after tune4 (86.4%, unsafe
  // misses 15.5%), then tuning data for round five (91.0%, unsafe misses 1.5% (4/265)): no longer a measure.
  'test/blind5': { labelledAt: '4c4e984', minTools: 1260, floor: { overall: 0.905, perCategory: 0.8 }, ceiling: { unsafe: 0.02, overHolds: 0.03 } },
  // The fresh measure for round five: labelled blind at 510bafb, second labelling by three readers joined at the
  // merge of blind6p1-3 (kappa 0.904), settled by SPEC 5 at bbc0894 (test/blind6/ADJUDICATION.md); measured once after
  // tune5 (85.1%, unsafe misses 11.4% (32/281), over-holds 4.2%), then tuning data for round six (87.1%, unsafe misses
  // 1.4% (4/281), over-holds 4.2%): no longer a measure.
  'test/blind6': { labelledAt: '510bafb', minTools: 1400, floor: { overall: 0.865, perCategory: 0.24 }, ceiling: { unsafe: 0.02, overHolds: 0.045 } },
  // The fresh measure for round six: harvested in three parts (c33d288, 49c20b6, d3052b7), labelled blind by four
  // readers joined at f2f350b, independently by four others joined at a73dbf3 (kappa 0.939), settled by SPEC 5 at
  // 3636c4f (test/blind7/ADJUDICATION.md); 219 E/D/F, short of the issue's 250 (the npm mirror here has few fresh
  // servers left). Measured once with round five's classifier (80.9%, unsafe misses 27.9% (61/219)) and once after
  // round six (81.0%, unsafe misses 27.4% (60/219), over-holds 3.6% (28/788)), then tuning data for round seven
  // (84.3%, unsafe misses 12.3% (27/219), over-holds 3.6% (28/788)): no longer a measure.
  'test/blind7': { labelledAt: 'f2f350b', minTools: 1000, floor: { overall: 0.835, perCategory: 0.09 }, ceiling: { unsafe: 0.13, overHolds: 0.04 } },
  // The fresh measure for round seven: 52 servers harvested at c006fcd (14 of them packages earlier harvesters listed and
  // dropped only for size), labelled blind by two readers joined at a8bcd65, independently by two others joined at
  // 598950c (kappa 0.875), settled by SPEC 5 at 800c146 (test/blind8/ADJUDICATION.md); 240 E/D/F, short of the issue's
  // 250. Measured once with round six's classifier (84.4%, unsafe misses 30.8% (74/240), over-holds 2.9% (25/868)) and
  // once after round seven (84.4%, unsafe misses 30.4% (73/240), over-holds 3.0% (26/868)); never tuned on.
  'test/blind8': { labelledAt: 'a8bcd65', minTools: 1100, floor: { overall: 0.84, perCategory: 0.24 }, ceiling: { unsafe: 0.31, overHolds: 0.035 } },
};
// The labelledAt and adjudication commits of blind4, blind5 and blind6 name the history of stops 28 and 29, which did
// not land: on main those sets arrived together in one commit (5e160d0), their labels as adjudicated then.

for (const dir of blindSets(ROOT)) {
  const known = KNOWN[dir];
  describe(`blind set ${dir}${known ? ` (labelled at ${known.labelledAt})` : ''}`, () => {
    it('reports accuracy overall and per category, unsafe misses and over-holds, within its floors', (t) => {
      const s = scoreSet(join(ROOT, dir));
      const line = formatSet(dir, s);
      t.diagnostic(line);
      assert.ok(s.n > 0, `${dir} has no labelled tools`);
      if (!known) return;
      assert.ok(s.n >= known.minTools, `${s.n} labelled tools`);
      assert.ok(s.overall >= known.floor.overall, line);
      for (const c of CATEGORIES) {
        const tally = s.perCategory.get(c)!;
        assert.ok(tally.right / tally.n >= known.floor.perCategory, `${c}: ${line}`);
      }
      assert.ok(s.unsafe.p <= known.ceiling.unsafe, `unsafe misses: ${line}`);
      assert.ok(s.overHolds.p <= known.ceiling.overHolds, `over-holds: ${line}`);
    });
  });
}
