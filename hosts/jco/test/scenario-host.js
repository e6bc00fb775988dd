// The stores of a scenario file (its `host` key), answering the JSON steps
// with the file's own spelling: the shared scenario host.
import { HostError } from '../host.js';
import { ScenarioHost as Shared, leadingWords } from '../../../tests/js/scenario-host.js';

export { leadingWords };

export class ScenarioHost extends Shared {
  constructor(answers = {}) {
    super(answers, { HostError });
  }
}
