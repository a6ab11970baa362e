// Issue 25: the SDK v2 client in each negotiation mode × both upstreams, through `toolgate run` (see helpers/era-pairings.ts).
import { pairingSuites } from './helpers/era-pairings.js';

pairingSuites('run');
