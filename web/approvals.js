// Approvals: placeholder until the approvals API lands.
import { h, replace } from './ui.js';

export async function render(view) {
  replace(view, h('h1', {}, 'Approvals'), h('p', { class: 'muted' }, 'Loading…'));
}
