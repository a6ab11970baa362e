export { classifyTool, classifyTools } from './classify.js';
export * from './types.js';
