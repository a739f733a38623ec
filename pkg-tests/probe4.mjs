import { generateSession } from './bench/session.js';
import { project } from 'contextfold';
const events = generateSession(10000);
const input = { events, model: { contextWindow: 100000000 }, format: 'ai-sdk' };
for (let i = 0; i < 40; i++) project(input);
