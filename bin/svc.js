#!/usr/bin/env node
// The installed entry point: runs the compiled CLI (no TypeScript at run time).
import '../dist/cli/main.js';
