import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PACKAGE_VERSION } from '../src/index.js';

test('the package loads', () => {
  assert.equal(PACKAGE_VERSION, '0.1.0');
});
