import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure, RetryState, TimeoutFailure, TimeoutType } from '@temporalio/common';
import { failureMessage } from '../../workflows/failureMessage';

describe('failureMessage (the one cause unwrapper of workflows)', () => {
  test('the innermost cause of an activity or child-workflow failure', () => {
    const app = ApplicationFailure.nonRetryable('git clone failed: repository not found', 'CloneFailed');
    const activity = new ActivityFailure('activity failed', 'cloneRepository', 'a1', RetryState.NON_RETRYABLE_FAILURE, 'worker', app);
    expect(failureMessage(activity)).toBe('git clone failed: repository not found');
    const child = new ChildWorkflowFailure('default', { workflowId: 'w', runId: 'r' }, 'mergeWorkflow', RetryState.NON_RETRYABLE_FAILURE, activity);
    expect(failureMessage(child)).toBe('git clone failed: repository not found');
    const timeout = new ActivityFailure('activity failed', 'runAgent', 'a2', RetryState.TIMEOUT, 'worker', new TimeoutFailure('heartbeat timeout', undefined, TimeoutType.HEARTBEAT));
    expect(failureMessage(timeout)).toBe('heartbeat timeout');
  });

  test('a plain error, a message-bearing value, anything else', () => {
    expect(failureMessage(new Error('plain'))).toBe('plain');
    expect(failureMessage({ message: 'object' })).toBe('object');
    expect(failureMessage('text')).toBe('text');
  });
});
