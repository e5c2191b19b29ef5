// The cluster bench's tools: S1's echo and S4's wait_cancel.
import echo from './sluice-tools.mjs';
import waitCancel from './sluice-cancel-tools.mjs';
export default [...echo, ...waitCancel];
