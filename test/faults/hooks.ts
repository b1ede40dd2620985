// Loaded after test/support/hooks.ts for the fault suite: prints the figures the tests recorded.
import { printFigures } from './figures.ts';

export const mochaHooks = {
  afterAll() {
    printFigures();
  },
};
