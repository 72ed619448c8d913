import { NoModelConfiguredError } from '../core/errors.js';
import type { ModelAdapter } from './adapter.js';

/** For agent-only deployments: there is no model, so a request that needs one fails clearly. */
export class EmptyAdapter implements ModelAdapter {
  readonly name = 'empty';

  async stream(): Promise<void> {
    throw new NoModelConfiguredError(
      'This gateway has no model configured (EmptyAdapter), so it cannot answer chat requests. Configure a model ' +
        'adapter.',
    );
  }
}
