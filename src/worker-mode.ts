// Imported first by worker.ts: the worker always runs the queue processors, whatever WORKERS says
// for the API, and feature modules read it when they are defined.
process.env.WORKERS = 'on';
