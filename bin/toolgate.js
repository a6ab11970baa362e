#!/usr/bin/env node
import { main } from '../dist/cli/index.js';

main(process.argv).then((code) => {
  if (typeof code === 'number') process.exitCode = code;
});
